// Chapter 12 — probes: why a pod is, or is not, Ready. How to run it and what it prints: README.md;
// the kubelet source behind it: notes/12-probes.md.
//
// Run it:
//
//	go run ./chapters/12-probes
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewProbesCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
