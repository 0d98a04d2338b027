// Chapter 03 — app.Run → run: the steps between a configuration and a running kubelet. How to run
// it and what it prints: README.md; the kubelet source behind it: notes/03-run.md.
//
// Run it:
//
//	go run ./chapters/03-run
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewRunCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
