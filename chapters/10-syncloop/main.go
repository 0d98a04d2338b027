// Chapter 10 follows one static pod through the real kubelet's sync loop, and shows each step
// from the live process: Go's execution tracer records the kubelet while the chapter adds a
// manifest to the static pod directory, edits it and deletes it; the steps printed are read
// back from that trace (package podjourney). Where the sync loop starts:
// pkg/kubelet/kubelet.go#L2671-L2712 (func (kl *Kubelet) syncLoop); the select it waits in:
// pkg/kubelet/kubelet.go#L2746-L2866 (func (kl *Kubelet) syncLoopIteration).
//
// Run it:
//
//	go run ./chapters/10-syncloop
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewSyncLoopCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
