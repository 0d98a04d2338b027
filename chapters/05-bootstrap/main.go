// Chapter 05 — the kubelet.Bootstrap interface, and a toy kubelet beside the real one. How to run
// it and what it prints: README.md; the kubelet source behind it: notes/05-bootstrap.md.
//
// Run it:
//
//	go run ./chapters/05-bootstrap
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewBootstrapCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
