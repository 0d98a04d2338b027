package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/12-node/bootstory"
)

// nodeOptions are the chapter's flags.
type nodeOptions struct {
	minikube bootstory.Minikube
	out      io.Writer
}

// NewNodeCommand builds the chapter's command.
func NewNodeCommand(ctx context.Context) *cobra.Command {
	o := &nodeOptions{}
	cmd := &cobra.Command{
		Use:   "12-node",
		Short: "Tell, from a running minikube node's own evidence, how its kubelet started its control plane",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			return o.run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.minikube.Profile, "profile", "p", "minikube", "the minikube profile")
	f.StringVar(&o.minikube.Binary, "minikube", "minikube", "the minikube command")
	return cmd
}

// profileName is what minikube accepts as a profile's name, at least two characters long
// (k8s.io/minikube pkg/minikube/config/profile.go, ProfileNameValid, at the lab's v1.38.1).
var profileName = regexp.MustCompile(`^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])$`)

// validate checks the flags before minikube is asked anything: a name minikube could not have
// given a profile would otherwise read as a profile not started yet, with advice to start one.
func (o *nodeOptions) validate() error {
	if p := o.minikube.Profile; !profileName.MatchString(p) || len(p) < 2 {
		return fmt.Errorf("--profile %q: not a name minikube gives a profile (letters, digits, '-' and '.', at least two)", p)
	}
	if o.minikube.Binary == "" {
		return errors.New(`--minikube "": name the minikube command`)
	}
	return nil
}

func (o *nodeOptions) run(ctx context.Context) error {
	if err := o.validate(); err != nil {
		return err
	}
	profile, err := o.minikube.LookUp(ctx)
	if err != nil {
		return err
	}
	kc := profile.Config.KubernetesConfig
	if profile.Config.Driver == "none" {
		return fmt.Errorf("profile %q uses the none driver: its node is this machine, and minikube ssh refuses it", profile.Name)
	}
	fmt.Fprintf(o.out, "minikube profile %q: %s driver, %s, Kubernetes %s. Its node's own evidence, read through `minikube ssh`:\n",
		profile.Name, profile.Config.Driver, kc.ContainerRuntime, kc.KubernetesVersion)
	story, err := bootstory.TellStory(ctx, o.minikube, bootstory.Options{NodeName: profile.Name, KubernetesVersion: kc.KubernetesVersion})
	if err != nil {
		return err
	}
	fmt.Fprintln(o.out, "\nWhat happened (seconds after systemd started the kubelet kubeadm had configured):")
	story.Print(o.out)

	// What the bootstrap ends with: once every kube-system pod is Ready (a node just started is
	// still starting CoreDNS, whose Deployment minikube scales down to one), or after two minutes
	// as it is then.
	if err := bootstory.WaitSettled(ctx, o.minikube, kc.KubernetesVersion, 2*time.Minute); err != nil {
		fmt.Fprintf(o.out, "\n(%v)\n", err)
	}
	kubectl := append(bootstory.Kubectl(kc.KubernetesVersion), "get", "nodes,pods", "--all-namespaces")
	listing, err := o.minikube.Output(ctx, kubectl...)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.out, "\n$ minikube ssh -- sudo %s\n%s", strings.Join(kubectl, " "), listing)
	return nil
}
