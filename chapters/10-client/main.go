// Chapter 10 — a client for the kubelet's API, the way production agents should call it. How to run
// it and what it prints: README.md; the kubelet source behind it: notes/10-client.md.
//
// Run it (a cluster in your kubeconfig, and examples/rbac applied):
//
//	go run ./chapters/10-client --node minikube
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewClientCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
