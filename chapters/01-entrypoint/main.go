// Chapter 01 — the entry point: main → app.NewKubeletCommand → cli.Run. How to run it and what it
// prints: README.md; the kubelet source behind it: notes/01-entrypoint.md.
//
// Run it:
//
//	go run ./chapters/01-entrypoint
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewEntrypointCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
