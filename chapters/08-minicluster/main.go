// Chapter 08 — the node and the control plane: a mini-cluster in one process. How to run it and
// what it prints: README.md; the kubelet source behind it: notes/08-minicluster.md.
//
// Run it:
//
//	go run ./chapters/08-minicluster
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewMiniclusterCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
