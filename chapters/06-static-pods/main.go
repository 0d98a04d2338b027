// Chapter 06 — static pods: a directory of manifests becomes pods, and edits become updates. How to
// run it and what it prints: README.md; the kubelet source behind it: notes/06-static-pods.md.
//
// Run it:
//
//	go run ./chapters/06-static-pods
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewStaticPodsCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
