// Chapter 09 — probes: why a pod is, or is not, Ready. How to run it and what it prints: README.md;
// the kubelet source behind it: notes/09-probes.md.
//
// Run it:
//
//	go run ./chapters/09-probes
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewProbesCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
