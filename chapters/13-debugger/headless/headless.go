// Package headless runs a program under a headless Delve and steps it: it builds Delve, starts it on a unix
// socket and connects to it, continues the program to a function, says where it stopped instead or
// why it did not stop, and ends Delve and the program. Chapter 13's session and the workshop's
// check of exercise 16 both drive Delve this way.
package headless

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"
)

// Build builds Delve into out from its pinned module, chapters/machinery/support/delve in the
// repository at root.
func Build(ctx context.Context, root, out string) error {
	module := filepath.Join(root, "chapters", "machinery", "support", "delve")
	output, err := exec.CommandContext(ctx, "go", "build", "-C", module, "-o", out, "github.com/go-delve/delve/cmd/dlv").CombinedOutput()
	if err != nil {
		return fmt.Errorf("build Delve in %s: %w\n%s", module, err, output)
	}
	return nil
}

// Program is a program to run under Delve.
type Program struct {
	Dlv  string   // the Delve binary
	Args []string // the program and its arguments
	// Dir holds Delve's socket and the log of its and the program's output: a directory only
	// this user can open, since Delve asks no credentials.
	Dir string
	Env []string // the environment of Delve and the program; nil: this process's
	// SysProcAttr starts Delve and the program (as another user, with its Credential, on Unix);
	// nil: as this process.
	SysProcAttr *syscall.SysProcAttr
}

// Session is a headless Delve with a program under it, and the client connected to it.
type Session struct {
	Client *rpc2.RPCClient
	cmd    *exec.Cmd
	exited chan error
	log    string
}

// Start starts `dlv exec --headless` on a unix socket in p.Dir and connects to it. The program
// waits, stopped at its first instruction, until the client continues it.
func Start(ctx context.Context, p Program) (*Session, error) {
	socket := filepath.Join(p.Dir, "dlv.sock")
	log := filepath.Join(p.Dir, "delve.log")
	out, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(p.Dlv, append([]string{"exec", "--headless", "--api-version=2", "--listen=unix:" + socket, p.Args[0], "--"}, p.Args[1:]...)...)
	cmd.Env = p.Env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = p.SysProcAttr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start Delve: %w", err)
	}
	s := &Session{cmd: cmd, exited: make(chan error, 1), log: log}
	go func() { s.exited <- cmd.Wait() }()
	for {
		conn, err := net.Dial("unix", socket)
		if err == nil {
			s.Client = rpc2.NewClientFromConn(conn)
			s.Client.SetReturnValuesLoadConfig(&api.LoadConfig{}) // what a call returns: nothing to load
			return s, nil
		}
		select {
		case err := <-s.exited:
			return nil, fmt.Errorf("delve exited before it served (%v):\n%s", err, s.Tail())
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-s.exited
			return nil, fmt.Errorf("delve did not serve on %s: %w\n%s", socket, ctx.Err(), s.Tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Drive runs steps with the client and waits for them to end, or for ctx to: Delve answers a
// continue only when the program stops, so only ctx ends the wait for a program that never
// stops. (Stop, after, ends Delve and the program.)
func (s *Session) Drive(ctx context.Context, steps func(*rpc2.RPCClient) error) error {
	done := make(chan error, 1)
	go func() { done <- steps(s.Client) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("stopped waiting for Delve: %w", context.Cause(ctx))
	}
}

// Stop ends the program and Delve: Detach(kill) has Delve kill the program and exit; a Delve that
// does not is killed by its PID (the program, no longer traced, then dies with it if it asked the
// kernel for that, as chapter 13's chain does).
func (s *Session) Stop() {
	go func() { _ = s.Client.Detach(true) }()
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Tail is the last lines of the program's and Delve's output.
func (s *Session) Tail() string {
	data, err := os.ReadFile(s.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// ContinueTo continues the program and returns Delve's state once the program stops in fn, at a
// breakpoint set there; otherwise an error saying where it stopped, or why it did not.
func ContinueTo(client *rpc2.RPCClient, fn string) (*api.DebuggerState, error) {
	state := <-client.Continue()
	if state == nil || state.Err != nil || state.Exited {
		return nil, fmt.Errorf("continue to %s: the program did not stop there: %s", fn, Describe(state))
	}
	th := state.CurrentThread
	if th == nil || th.Function == nil || th.Function.Name() != fn || state.SelectedGoroutine == nil {
		return nil, fmt.Errorf("continue to %s: stopped in %s instead", fn, where(th))
	}
	return state, nil
}

// Describe says what Delve's answer to a continue tells of a program that did not stop: it
// exited, with its status; Delve's error; or no answer.
func Describe(state *api.DebuggerState) string {
	switch {
	case state == nil:
		return "no answer from Delve"
	case state.Err != nil:
		return state.Err.Error()
	case state.Exited:
		return fmt.Sprintf("it exited with status %d", state.ExitStatus)
	}
	return "it is still running"
}

func where(th *api.Thread) string {
	if th == nil || th.Function == nil {
		return "an unknown place"
	}
	return fmt.Sprintf("%s (%s:%d)", th.Function.Name(), th.File, th.Line)
}
