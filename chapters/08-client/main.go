// Chapter 08 is a client for the kubelet's API, written the way production agents should call
// it: it finds a node's kubelet from the Node object, authenticates with a ServiceAccount token
// (the pod's, a token file, or one minted for kubelet-reader — your kubeconfig's credentials
// only with --auth=kubeconfig), never sends credentials over plain HTTP, verifies TLS, falls
// back to the apiserver's node proxy only when the kubelet cannot be reached, and explains each
// failure with what to do about it. `08-client doctor` checks the way to a kubelet step by step.
//
// Its logic is the light package kubeletclient (client-go and the API types, no kubelet code).
// Like kubectl, it prints errors as "error: …" rather than as log lines (program.Run).
//
// Run it against minikube (or any cluster in your kubeconfig):
//
//	go run ./chapters/08-client --node minikube
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewClientCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
