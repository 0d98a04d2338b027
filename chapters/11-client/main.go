// Chapter 11 — a client for the kubelet's API, the way production agents should call it. How to run
// it and what it prints: README.md; the kubelet source behind it: notes/11-client.md.
//
// Run it (a cluster in your kubeconfig, and examples/rbac applied):
//
//	go run ./chapters/11-client --node minikube
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
