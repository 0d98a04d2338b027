// kubelet-pods — the production kubelet client on chapter 11's package: doctor, watch, the read
// endpoints, five output formats. How to run it and what it prints: README.md.
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewKubeletPodsCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
