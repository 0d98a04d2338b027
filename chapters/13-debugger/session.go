package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/13-debugger/headless"
)

// A step is one function of the chain, where the session stops.
type step struct {
	function string // as Delve names it
	what     string // what it does, and the chapter that runs it
	call     string // an expression Delve evaluates at the stop, "" for none
}

// chain is the startup chain, in the order the kubelet runs it.
var chain = []step{
	{function: "k8s.io/kubernetes/cmd/kubelet/app.NewKubeletCommand", what: "builds the cobra command (chapter 01)"},
	{function: "k8s.io/kubernetes/cmd/kubelet/app.NewKubeletCommand.func1", what: "the command's RunE: flags, configuration, dependencies (chapter 02)"},
	{function: "k8s.io/kubernetes/cmd/kubelet/app.Run", what: "logs the version, initForOS, then run (chapter 03)"},
	{function: "k8s.io/kubernetes/cmd/kubelet/app.run", what: "from a configuration to a running kubelet (chapter 03)",
		call: "main.hollowReplacements(kubeDeps)"},
	{function: "k8s.io/kubernetes/cmd/kubelet/app.RunKubelet", what: "node name, node IPs, capabilities (chapter 04)"},
	{function: "k8s.io/kubernetes/cmd/kubelet/app.createAndInitKubelet", what: "NewMainKubelet, BirthCry, garbage collection (chapter 04)"},
	{function: "k8s.io/kubernetes/pkg/kubelet.NewMainKubelet", what: "builds the Kubelet and its managers (chapter 04)"},
	{function: "k8s.io/kubernetes/cmd/kubelet/app.startKubelet", what: "starts Run and the servers, each in a goroutine (chapter 04)"},
	{function: "k8s.io/kubernetes/pkg/kubelet.(*Kubelet).Run", what: "its modules, then the sync loop (chapter 07)"},
}

// chainPackage is the program the session debugs.
const chainPackage = "github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/13-debugger/chain"

// paths shortens the file names Delve reports: the module cache's and Go's own are printed
// from the module (Kubernetes' without its module), this repository's from its root.
type paths struct{ modcache, goroot, root string }

func (p paths) short(file string) string {
	if rest, ok := strings.CutPrefix(file, p.modcache+"/"); ok {
		if version, inK8s := strings.CutPrefix(rest, "k8s.io/kubernetes@"); inK8s {
			return version[strings.Index(version, "/")+1:]
		}
		return rest
	}
	if rest, ok := strings.CutPrefix(file, p.goroot+"/src/"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(file, p.root+"/"); ok {
		return rest
	}
	return file
}

// shortFunc drops a function's package path up to its last element: app.run, cobra.(*Command).execute.
func shortFunc(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// run builds Delve and the chain, starts the chain under a headless Delve on a unix socket in a
// directory only this user can open, and steps it.
func (o *debugOptions) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "debug-chain-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var p paths
	for _, v := range []struct {
		into *string
		args []string
	}{
		{&p.root, []string{"list", "-m", "-f", "{{.Dir}}"}},
		{&p.modcache, []string{"env", "GOMODCACHE"}},
		{&p.goroot, []string{"env", "GOROOT"}},
	} {
		if *v.into, err = goCommand(ctx, "", v.args...); err != nil {
			return err
		}
	}
	versions, err := goCommand(ctx, p.root, "list", "-m", "-f", "{{.Version}}", "github.com/go-delve/delve", "k8s.io/kubernetes")
	if err != nil {
		return err
	}
	delveVersion, kubernetesVersion, _ := strings.Cut(versions, "\n")
	dlv := o.dlv
	if dlv == "" {
		dlv = filepath.Join(dir, "dlv")
		if err := headless.Build(ctx, p.root, dlv); err != nil {
			return err
		}
	}
	// The chain's own package is built without optimizations (-N -l): Delve calls a function
	// of it, and calls only unoptimized functions. The rest is built as go build builds it,
	// unless --gcflags says otherwise.
	binary := filepath.Join(dir, "kubelet-chain")
	build := []string{"build", "-o", binary}
	if o.gcflags != "" {
		build = append(build, "-gcflags="+o.gcflags)
	}
	build = append(build, "-gcflags="+chainPackage+"=-N -l")
	if _, err := goCommand(ctx, p.root, append(build, chainPackage)...); err != nil {
		return err
	}
	kind := "optimized, as go build builds it"
	if o.gcflags != "" {
		kind = "-gcflags=" + o.gcflags
	}
	fmt.Fprintf(o.out, "Delve %s stops chapters/13-debugger/chain (the kubelet's main, %s)\n"+
		"at each step of the chain. Files without a module are k8s.io/kubernetes@%s's.\n\n", delveVersion, kind, kubernetesVersion)

	work := filepath.Join(dir, "chain")
	if err := os.Mkdir(work, 0o700); err != nil {
		return err
	}
	// Delve serves on a unix socket in dir, which only this user can open: Delve asks no
	// credentials.
	session, err := headless.Start(ctx, headless.Program{Dlv: dlv, Args: []string{binary, work}, Dir: dir})
	if err != nil {
		return err
	}
	defer session.Stop()
	// Ctrl-C or --timeout end the wait for a stop, and session.Stop (deferred) ends Delve and the
	// program.
	if err := session.Drive(ctx, func(client *rpc2.RPCClient) error { return o.step(client, p) }); err != nil {
		return fmt.Errorf("%w\nthe program's output, last lines:\n%s", err, session.Tail())
	}
	fmt.Fprintf(o.out, "%d steps, in the chain's order, each stopped once. Delve then ended the program.\n", len(chain))
	return nil
}

// step sets a breakpoint on each function of the chain, continues to each in turn and prints
// where the program stopped.
func (o *debugOptions) step(client *rpc2.RPCClient, p paths) error {
	for _, s := range chain {
		if _, err := client.CreateBreakpoint(&api.Breakpoint{FunctionName: s.function}); err != nil {
			return fmt.Errorf("break %s: %w", s.function, err)
		}
	}
	for i, s := range chain {
		state, err := headless.ContinueTo(client, s.function)
		if err != nil {
			return err
		}
		th := state.CurrentThread
		fmt.Fprintf(o.out, "%2d. %s — %s\n", i+1, shortFunc(s.function), s.what)
		fmt.Fprintf(o.out, "    stopped at %s:%d in %s\n", p.short(th.File), th.Line, goroutine(state.SelectedGoroutine, p))
		frames, err := client.Stacktrace(th.GoroutineID, o.frames+3, 0, 0, nil)
		if err != nil {
			return fmt.Errorf("stack of goroutine %d: %w", th.GoroutineID, err)
		}
		frames = slices.DeleteFunc(frames[min(1, len(frames)):], func(f api.Stackframe) bool {
			return f.Function == nil || strings.HasPrefix(f.Function.Name(), "runtime.") // the Go runtime's own start
		})
		for j, f := range frames[:min(o.frames, len(frames))] {
			label := "called from"
			if j > 0 {
				label = ""
			}
			fmt.Fprintf(o.out, "    %-11s  %-38s %s:%d\n", label, shortFunc(f.Function.Name()), p.short(f.File), f.Line)
		}
		if s.call != "" {
			after, err := client.Call(th.GoroutineID, s.call, false)
			if err == nil && after != nil && after.Err != nil {
				err = after.Err
			}
			if err != nil {
				return fmt.Errorf("call %s: %w", s.call, err)
			}
			fmt.Fprintf(o.out, "    Delve calls %s here: run then finds cAdvisor, a container\n"+
				"    manager and an event recorder in its Dependencies (the hollow node's, as chapter 04's) and\n"+
				"    builds none — the real container manager needs /var/lib/kubelet/device-plugins, which only\n"+
				"    root may make, and the real recorder has the kubelet read the kernel's log (/dev/kmsg).\n", s.call)
		}
	}
	return nil
}

// goroutine says which goroutine stopped: the program's main one, or one a go statement started.
func goroutine(g *api.Goroutine, p paths) string {
	switch {
	case g == nil:
		return "no goroutine"
	case g.ID == 1:
		return "goroutine 1 (main)"
	case g.GoStatementLoc.Function != nil:
		return fmt.Sprintf("a new goroutine,\n    started by the go statement at %s:%d", p.short(g.GoStatementLoc.File), g.GoStatementLoc.Line)
	}
	return fmt.Sprintf("goroutine %d", g.ID)
}

// goCommand runs the go command in dir and returns its output, trimmed.
func goCommand(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
