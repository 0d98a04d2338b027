// Chapter 12 runs one static pod with a startup, a readiness and a liveness probe on the real
// kubelet and shows, from the kubelet's own /pods, what each probe's answers do: README.md runs
// it, notes/12-probes.md explains it in the source.
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
