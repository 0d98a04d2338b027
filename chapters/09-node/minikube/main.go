// Command minikube drives this walkthrough's node (chapter 09) with minikube's commands and
// their semantics — start (with --extra-config), ssh, cp, ip, kubectl, status, stop, delete,
// logs — so that what a workshop or a chapter README tells a minikube user to type runs here
// literally: on the real kubelet, kubeadm, containerd and runc, in namespaces of this machine
// instead of a Docker container. Where it differs from minikube, `minikube --help` and the
// chapter README say so.
//
// Build it with `make minikube` (it lands in .bin/, next to the node's components), then:
//
//	sudo .bin/minikube start
package main

import (
	"context"
	"os"
)

func main() {
	command := NewMinikubeCommand(context.Background())
	os.Exit(execute(command))
}
