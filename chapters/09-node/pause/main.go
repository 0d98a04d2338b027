// Command pause is the process that holds a pod's namespaces: the first container of every pod
// sandbox, doing nothing until it is told to stop. It is a Go port of the pause program that
// Kubernetes ships as registry.k8s.io/pause, build/pause/linux/pause.c#L32-L68 (sigdown, sigreap,
// main): it exits 0 on SIGINT or SIGTERM, reaps every child that exits (as PID 1 of the pod's
// PID namespace, when the pod shares one, it inherits the orphans of the pod's processes), and
// `pause -v` prints its version.
//
// The node's pause image (registry.k8s.io/pause:3.10.2, built by package nodeimages) holds this
// program, built static:
//
//	make node-pause
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is stamped by the Makefile (-X main.version=$(PAUSE_VERSION)), as pause.c's VERSION.
var version = "HEAD"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is pause.c's main: it returns only when a SIGINT or SIGTERM arrives, or for -v.
func run(args []string, stdout, stderr io.Writer) int {
	for _, arg := range args {
		if strings.EqualFold(arg, "-v") {
			fmt.Fprintf(stdout, "pause.c %s\n", version)
			return 0
		}
	}
	// Go delivers signals on a channel rather than to a handler, but the behaviour is pause.c's:
	// SIGINT and SIGTERM end the process with status 0, SIGCHLD reaps every exited child.
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// pause.c warns before it installs its handlers; here the warning comes after, so that whoever
	// reads it knows a SIGTERM from then on is handled.
	if os.Getpid() != 1 {
		// Not an error, as pause.c says: pause sees use outside of infra containers.
		fmt.Fprintln(stderr, "Warning: pause should be the first process")
	}
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		// psignal(3)'s words: "Terminated", "Interrupt".
		name := sig.String()
		fmt.Fprintf(stderr, "Shutting down, got signal: %s\n", strings.ToUpper(name[:1])+name[1:])
		return 0
	}
	return 42 // pause.c: "infinite loop terminated"
}

// reap collects every child that has exited, without blocking (pause.c's sigreap). Signals of
// the same kind merge while one is pending, so one SIGCHLD may stand for several children.
func reap() {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
