//go:build tools

// Package minikube pins real minikube: this directory is a Go module of its own, whose only
// requirement is k8s.io/minikube at the version the lab builds (make minikube), so that minikube
// builds with its own dependencies and go.sum checks them. (Its storage-provisioner, imported here
// too, builds in ../storageprovisioner, with the client libraries its image v5 was built with.)
// The module proxy serves k8s.io/minikube at a given version but not its version list, which
// `go install k8s.io/minikube/cmd/minikube@VERSION` needs: building in a module that requires it
// is the way that works.
package minikube

import (
	_ "k8s.io/minikube/cmd/minikube"
	_ "k8s.io/minikube/cmd/storage-provisioner"
)
