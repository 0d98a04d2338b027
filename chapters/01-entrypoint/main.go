// Chapter 01 is the kubelet's entry point: the three lines of cmd/kubelet/kubelet.go#L35-L39
// (func main) and the cobra command they build, app.NewKubeletCommand
// (cmd/kubelet/app/server.go#L142-L329 (func NewKubeletCommand)).
//
// The chapter builds the real command and takes it apart: its settings, its four flag sets, and
// what component-base's cli.Run adds around it. It runs the real command only where that is
// safe on a laptop — --help and --version, which return (or exit) before anything starts.
//
// Run it:
//
//	go run ./chapters/01-entrypoint
//	go run ./chapters/01-entrypoint kubelet --help
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewEntrypointCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
