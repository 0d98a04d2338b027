// Chapter 07 is the node and the control plane: the real kubelet registering its Node with a
// real kube-apiserver, heartbeating through its lease, and mirroring its static pods into the
// apiserver — what `kubectl get pods -n kube-system` shows on minikube. etcd, the apiserver and
// the kubelets all run in this process (package minicluster); `kubectl` reaches them through
// the kubeconfig it prints.
//
// The kubelet needs a node IP that is not loopback. Unless --node-ip names one of this
// machine's addresses, the cluster runs in a private network namespace with its own address
// (10.200.0.1), and this process relays 127.0.0.1 to its apiserver, so that kubectl works
// from your shell and nothing listens on your network.
//
// Run it:
//
//	go run ./chapters/07-minicluster
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewMiniclusterCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
