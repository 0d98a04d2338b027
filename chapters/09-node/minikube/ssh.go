package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// sshCommand is `minikube ssh`. minikube's own logs in over SSH as the node's `docker` user,
// who may sudo without a password, and hands the command over as its arguments joined by
// spaces, for the node's shell to split again (so `minikube ssh -- echo 'a  b'` prints "a b",
// and pipes or redirections in the arguments run in the node). minikube's flags are parsed
// anywhere before `--`: `minikube ssh ls -la` is an error, `minikube ssh -- ls -la` is not.
// Its default client asks for a terminal even when none is attached, so the command's
// standard error arrives on standard output and lines end in \r\n; --native-ssh=false uses the
// system's ssh, which does neither. A failing command makes minikube print "ssh: Process
// exited with status N" and exit 1 (cmd/minikube/cmd/ssh.go; pkg/libmachine/ssh/client.go).
func (o *options) sshCommand(ctx context.Context) *cobra.Command {
	native := true
	cmd := &cobra.Command{
		Use:   "ssh",
		Short: "Log into the minikube environment (for debugging)",
		Long:  "Log into or run a command on a machine with SSH; similar to 'docker-machine ssh'.\nUse -- to pass flags to the command: minikube ssh -- ls -la",
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := o.running()
			if err != nil {
				return err
			}
			var c *exec.Cmd
			switch {
			case len(args) == 0:
				c = n.CommandAs(ctx, "docker", "bash", "--login")
			case native:
				// A terminal, as the native client's RequestPty gives: script(1) in the node.
				c = n.CommandAs(ctx, "docker", "script", "--quiet", "--return", "--flush", "--command", joinArgs(args), "/dev/null")
			default:
				c = n.CommandAs(ctx, "docker", "bash", "-c", joinArgs(args))
			}
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, o.out, o.err
			if native && len(args) > 0 && !isTerminal(os.Stdin) {
				// The terminal on the node's side never sees the end of a standard input that is
				// not a terminal: sshd does not turn the channel's EOF into one for a command
				// that has a terminal (the reason `echo x | ssh -tt host cat` never ends). Given
				// an end, script(1) would type the terminal's EOF character into it, and its echo
				// would land in the command's output.
				stdin, done, err := openEnded(os.Stdin)
				if err != nil {
					return err
				}
				defer done()
				c.Stdin = stdin
			}
			err = c.Run()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if native {
					return &exitError{code: 1, msg: fmt.Sprintf("ssh: Process exited with status %d", exit.ExitCode())}
				}
				return &exitError{code: 1, msg: fmt.Sprintf("ssh: exit status %d", exit.ExitCode())}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&native, "native-ssh", true, "Use native Golang SSH client (default true). Set to 'false' to use the command line 'ssh' command when accessing the docker machine.")
	return cmd
}

// isTerminal says whether f is a terminal (a character device such as /dev/null is not).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// openEnded returns a pipe that carries what in holds and then stays open until done is called.
func openEnded(in io.Reader) (*os.File, func(), error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() { _, _ = io.Copy(w, in) }()
	return r, func() { _ = w.Close(); _ = r.Close() }, nil
}
