// Chapter 09 reads, from a real minikube node, the story the kubelet's startup chain ends with:
// the kubelet starts before any apiserver exists, runs etcd and kube-apiserver from manifest
// files in real containers, registers with the apiserver it has just started, and mirrors its
// static pods. The evidence is the node's own — systemd's journal, containerd's records, the
// apiserver's timestamps — read through `minikube ssh`, from your minikube or from the lab's
// (chapters/lab: real minikube on a real Docker engine, offline).
//
// Run it, with a minikube profile running:
//
//	minikube start --driver=docker --container-runtime=containerd --kubernetes-version=v1.37.2
//	go run ./chapters/09-node
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewNodeCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
