// Chapter 10 — pressure: when a node is in trouble. How to run it and what it prints: README.md;
// the kubelet source behind it: notes/10-pressure.md.
//
// Run it:
//
//	go run ./chapters/10-pressure
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewPressureCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
