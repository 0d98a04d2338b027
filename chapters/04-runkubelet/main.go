// Chapter 04 — RunKubelet → createAndInitKubelet → Bootstrap → startKubelet, for real. How to run
// it and what it prints: README.md; the kubelet source behind it: notes/04-runkubelet.md.
//
// Run it:
//
//	go run ./chapters/04-runkubelet
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewRunKubeletCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
