// Chapter 13 — the chain in Delve: the real kubelet stopped at every step. How to run it and what
// it prints: README.md; the kubelet source behind it: notes/13-debugger.md.
//
// Run it:
//
//	go run ./chapters/13-debugger
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewDebuggerCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
