// Chapter 07 — inside the sync loop, shown live. How to run it and what it prints: README.md; the
// kubelet source behind it: notes/07-syncloop.md.
//
// Run it:
//
//	go run ./chapters/07-syncloop
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewSyncLoopCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
