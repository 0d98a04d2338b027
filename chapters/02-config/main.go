// Chapter 02 — configuration: --config, KubeletConfiguration, and flags over the file. How to run
// it and what it prints: README.md; the kubelet source behind it: notes/02-config.md.
//
// Run it:
//
//	go run ./chapters/02-config
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewConfigCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
