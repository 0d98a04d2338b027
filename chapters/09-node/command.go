package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-node/node"
)

type nodeOptions struct {
	dir, components, rootfs string
	once                    bool
	out                     io.Writer
}

// NewNodeCommand builds the chapter's command.
func NewNodeCommand(ctx context.Context) *cobra.Command {
	o := &nodeOptions{}
	cmd := &cobra.Command{
		Use:   "09-node",
		Short: "Boot a minikube-shaped node (systemd, containerd, kubeadm) in private namespaces and watch the kubelet start its own control plane",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			return o.run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "run directory (default: a temporary one, removed on exit)")
	f.StringVar(&o.components, "components", ".bin/node", "the node's binaries and images (make node-components)")
	f.StringVar(&o.rootfs, "rootfs", ".bin/node/rootfs", "the node's root file system (make node-rootfs)")
	f.BoolVar(&o.once, "once", false, "tell the story and stop, instead of serving until Ctrl-C")
	cmd.AddCommand(node.Commands()...)
	cmd.AddCommand(newRootfsCommand(ctx), newCheckCommand(o))
	return cmd
}

// newRootfsCommand makes the node's root file system (make node-rootfs).
func newRootfsCommand(ctx context.Context) *cobra.Command {
	var dir, mirror string
	cmd := &cobra.Command{
		Use:   "rootfs",
		Short: "Make the node's root file system with debootstrap (Debian bookworm), unless it exists",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return node.EnsureRootfs(ctx, dir, mirror, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&dir, "rootfs", ".bin/node/rootfs", "where to make it")
	cmd.Flags().StringVar(&mirror, "mirror", node.DefaultMirror, "Debian mirror")
	return cmd
}

// newCheckCommand says what this machine lacks to run the node, if anything.
func newCheckCommand(o *nodeOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Say whether this machine can run the node, and what it lacks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := node.Requirements(node.Options{Components: o.components, Rootfs: o.rootfs}); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "This machine can run the node.")
			return nil
		},
	}
}

// kubernetesVersion is the version the node's components were built at, as their kubeadm says.
func kubernetesVersion(ctx context.Context, components string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(components, "bin", "kubeadm"), "version", "-o", "short").Output()
	if err != nil {
		return "", fmt.Errorf("kubeadm version: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func (o *nodeOptions) run(ctx context.Context) (err error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := node.Requirements(node.Options{Components: o.components, Rootfs: o.rootfs}); err != nil {
		return err
	}
	version, err := kubernetesVersion(ctx, o.components)
	if err != nil {
		return err
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kubelet-walkthrough-node-"); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.out, "A node as minikube's Docker driver makes one, in namespaces of this machine: systemd, containerd, runc,\n"+
		"kubeadm and Kubernetes %s, all built from pinned sources. Run directory: %s\n\n", version, dir)
	n, err := node.Start(ctx, node.Options{Dir: dir, Rootfs: o.rootfs, Components: o.components,
		KubernetesVersion: version, StopWithParent: true, Log: o.out})
	if n != nil {
		defer func() {
			start := time.Now()
			stopErr := n.Stop(context.Background())
			if o.dir == "" && stopErr == nil {
				stopErr = os.RemoveAll(dir)
			}
			if err == nil {
				err = stopErr
			}
			what := "Stopped the node: nothing of it is left outside its run directory"
			if o.dir == "" {
				what = "Stopped the node and removed its run directory: nothing of it is left"
			}
			klog.FromContext(ctx).V(1).Info("Node stopped", "elapsed", time.Since(start))
			fmt.Fprintln(o.out, what+".")
		}()
	}
	if err != nil {
		return err
	}
	if err := n.Bootstrap(ctx); err != nil {
		return interrupted(ctx, err)
	}
	story, err := n.TellStory(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.out, "\nWhat happened, from the node's own evidence (seconds after systemd started the kubelet kubeadm had configured):")
	story.Print(o.out)

	admin, err := n.AdminKubeconfig(ctx)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*admin, kubeconfig); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "\n$ kubectl get nodes,pods -A\n")
	kubectl := exec.CommandContext(ctx, filepath.Join(o.components, "bin", "kubectl"), "--kubeconfig", kubeconfig, "get", "nodes,pods", "-A")
	kubectl.Stdout, kubectl.Stderr = o.out, o.out
	if err := kubectl.Run(); err != nil {
		return fmt.Errorf("kubectl: %w", err)
	}
	fmt.Fprintf(o.out, "\nkubeconfig: %s (server %s)\n", kubeconfig, n.APIServer)
	fmt.Fprintf(o.out, "Inside the node, as `minikube ssh` would: sudo nsenter --target %d --all -- bash\n", n.State.NodePID)
	fmt.Fprintf(o.out, "Next to it, on its network (where %s answers, as on Linux with minikube's Docker driver): sudo nsenter --net=/proc/%d/ns/net -- bash\n",
		n.State.IP, n.State.LauncherPID)
	if o.once {
		return nil
	}
	fmt.Fprintln(o.out, "\nServing until Ctrl-C.")
	<-ctx.Done()
	fmt.Fprintln(o.out)
	return nil
}

// interrupted turns an error caused by Ctrl-C into a quiet stop.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
