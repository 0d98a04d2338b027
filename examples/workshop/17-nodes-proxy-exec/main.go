// Exercise 17's program: run a command in a pod through the kubelet's /exec, with the token of an
// identity that may only `get nodes/proxy` — on the kubelet's port, or through the apiserver's
// node proxy. What it shows and why: README.md.
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewNodeExecCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
