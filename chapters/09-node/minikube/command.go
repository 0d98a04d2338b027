package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-node/node"
)

// options are the flags every subcommand shares.
type options struct {
	profile    string
	components string
	paths      paths
	out, err   io.Writer
}

// NewMinikubeCommand builds the command and its subcommands.
func NewMinikubeCommand(ctx context.Context) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "minikube",
		Short: "minikube's commands for kubelet-walkthrough's node: a kubeadm node in namespaces of this machine, not a Docker container",
		Long: `minikube's commands, for kubelet-walkthrough's node (chapter 09): the real kubeadm, kubelet,
containerd and runc, with systemd as PID 1, in private namespaces of this machine instead of a Docker
container. It runs what a workshop tells a minikube user to type: start (--extra-config as minikube
routes it), ssh, cp, ip, kubectl, status, stop, delete, logs, image build and ls. It needs root.

Where it differs from minikube (chapters/09-node/README.md has the list): one driver, one node, the
Kubernetes version the components were built at, the bridge CNI instead of kindnet, no addons.`,
		SilenceUsage: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			o.out, o.err = cmd.OutOrStdout(), cmd.ErrOrStderr()
			var err error
			if o.paths, err = minikubePaths(); err != nil {
				return err
			}
			if o.components == "" {
				o.components = defaultComponents()
			}
			return nil
		},
	}
	// cobra's own message for a flag it does not know, as minikube prints it.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: 1, msg: "Error: " + err.Error()}
	})
	f := cmd.PersistentFlags()
	f.StringVarP(&o.profile, "profile", "p", "minikube", "The name of the minikube VM being used.")
	f.StringVar(&o.components, "components", "", "the node's binaries, images and root file system (default: $WALKTHROUGH_NODE_COMPONENTS, or node/ beside this program)")
	_ = f.MarkHidden("components")
	cmd.AddCommand(o.startCommand(ctx), o.stopCommand(ctx), o.deleteCommand(ctx), o.statusCommand(ctx),
		o.ipCommand(), o.sshCommand(ctx), o.cpCommand(ctx), o.kubectlCommand(ctx), o.logsCommand(ctx), o.imageCommand(ctx))
	cmd.AddCommand(node.Commands()...)
	return cmd
}

// defaultComponents finds the components `make node-components` built: next to this program
// in .bin/.
func defaultComponents() string {
	if env := os.Getenv("WALKTHROUGH_NODE_COMPONENTS"); env != "" {
		return env
	}
	self, err := os.Executable()
	if err != nil {
		return "node"
	}
	return filepath.Join(filepath.Dir(self), "node")
}

// exitError carries minikube's exit code (pkg/minikube/reason: MK_USAGE 14, GUEST_NOT_FOUND 85,
// GUEST_NOT_RUNNING 83…) and, when it has one, the reason's name.
type exitError struct {
	code   int
	reason string
	msg    string
}

func (e *exitError) Error() string { return e.msg }

func usage(format string, args ...any) error {
	return &exitError{code: 14, reason: "MK_USAGE", msg: fmt.Sprintf(format, args...)}
}

// exitCode passes a command's own exit status through (minikube kubectl does).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// execute runs the command and returns the exit code, printing errors as minikube does
// without a terminal: "X Exiting due to REASON: message".
func execute(cmd *cobra.Command) int {
	err := cli.RunNoErrOutput(cmd)
	if err == nil {
		return 0
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.reason != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "X Exiting due to %s: %s\n", ee.reason, ee.msg)
		} else if ee.msg != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "X Exiting due to an error: %v\n", err)
	return 1
}

// notFound is minikube's answer for a profile that does not exist (mustload.Partial).
func (o *options) notFound() error {
	return &exitError{code: 85, msg: fmt.Sprintf("* Profile %q not found. Run \"minikube profile list\" to view all profiles.\n  - To start a cluster, run: \"minikube start\"", o.profile)}
}

// running loads the profile's node and insists that it runs (mustload.Running).
func (o *options) running() (*node.Node, error) {
	n, err := node.Open(o.paths.machine(o.profile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, o.notFound()
	}
	if err != nil {
		return nil, err
	}
	if !n.State.Running() {
		return nil, &exitError{code: 83, msg: fmt.Sprintf("* The control-plane node %s host is not running: state=Stopped\n  - To start a cluster, run: \"minikube start\"", o.profile)}
	}
	return n, nil
}

func (o *options) ipCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ip",
		Short: "Retrieves the IP address of the specified node",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			n, err := o.running()
			if err != nil {
				return err
			}
			fmt.Fprintln(o.out, n.State.IP)
			return nil
		},
	}
}

// kubectlCommand is `minikube kubectl -- ARGS`: the kubectl of the cluster's version, with
// --cluster PROFILE put first when there is more than one argument (cmd/minikube/cmd/kubectl.go),
// the kubeconfig the user's, the exit status passed through.
func (o *options) kubectlCommand(ctx context.Context) *cobra.Command {
	return &cobra.Command{
		Use:   "kubectl -- [flags]",
		Short: "Run a kubectl binary matching the cluster version",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 && args[0] != "--help" {
				args = append([]string{"--cluster", o.profile}, args...)
			}
			k := exec.CommandContext(ctx, filepath.Join(o.components, "bin", "kubectl"), args...)
			k.Stdin, k.Stdout, k.Stderr = os.Stdin, o.out, o.err
			err := k.Run()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return exitCode(exit.ExitCode())
			}
			return err
		},
	}
}

// joinArgs is how minikube's ssh hands a command to the node: its arguments joined by single
// spaces, unquoted, for the node's shell to split again (libmachine/ssh, NativeClient.Shell).
func joinArgs(args []string) string { return strings.Join(args, " ") }
