package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-node/bootstory"
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
		Use:   "09-node",
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

func (o *nodeOptions) run(ctx context.Context) error {
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

	// What the bootstrap ends with: once kube-system's Deployments are Available and its pods
	// Ready (a node just started is still starting CoreDNS), or after two minutes as it is then.
	for _, what := range [][]string{{"--for=condition=Available", "deployments"}, {"--for=condition=Ready", "pods"}} {
		wait := append(bootstory.Kubectl(kc.KubernetesVersion), "wait", what[0], what[1], "--all", "--namespace=kube-system", "--timeout=2m")
		if _, err := o.minikube.Output(ctx, wait...); err != nil {
			fmt.Fprintf(o.out, "\n(kube-system's %s are not all %s after two minutes: %v)\n", what[1], strings.TrimPrefix(what[0], "--for=condition="), err)
		}
	}
	kubectl := append(bootstory.Kubectl(kc.KubernetesVersion), "get", "nodes,pods", "--all-namespaces")
	listing, err := o.minikube.Output(ctx, kubectl...)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.out, "\n$ minikube ssh -- sudo %s\n%s", strings.Join(kubectl, " "), listing)
	return nil
}
