// Chapter 07 — the node and the control plane: a mini-cluster in one process. How to run it and
// what it prints: README.md; the kubelet source behind it: notes/07-minicluster.md.
//
// Run it:
//
//	go run ./chapters/07-minicluster
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewMiniclusterCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
