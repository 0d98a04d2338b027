// Chapter 12 — a real node: the kubelet starts its own control plane. How to run it and what it
// prints: README.md; the kubelet source behind it: notes/12-node.md.
//
// Run it:
//
//	go run ./chapters/12-node
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewNodeCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
