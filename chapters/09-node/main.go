// Chapter 09 boots a node the way minikube's Docker driver makes one — systemd as PID 1 of a
// root file system of its own, containerd, runc and a kubelet unit, in private namespaces of
// this machine — and runs `kubeadm init` on it with minikube's configuration. Then it shows,
// from the node's own evidence, the story the kubelet's startup chain ends with: the kubelet
// starts before any apiserver exists, runs etcd and kube-apiserver from manifest files in real
// containers, registers with the apiserver it has just started, and mirrors its static pods.
//
// Run it (as root; `make run-09-node` builds the components first):
//
//	go run ./chapters/09-node
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewNodeCommand(context.Background())
	os.Exit(program.Run(command))
}
