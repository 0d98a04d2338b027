//go:build tools

// Package storageprovisioner pins minikube's storage-provisioner as its image v5 was built: a Go
// module of its own. The provisioner's source is k8s.io/minikube at the version the lab builds
// (cmd/storage-provisioner, pkg/storage: the same code as in March 2021 but for renames and error
// wrapping), and the Kubernetes client libraries are the ones v5 was built with — v0.20.5, minikube's
// go.mod at e2c02ed6d0 ("bump storage provisioner image", the commit that made v5, first released
// in v1.19.0), whose client-go still has the Endpoints lock its provisioner library
// (sig-storage-lib-external-provisioner v6.3.0, unchanged since) asks for. Built with minikube
// v1.38.1's own dependencies instead, it exits at start: "endpoints lock is removed, migrate to
// leases". The module proxy serves k8s.io/minikube only at v1.37.0 and v1.38.1, so the 2021
// module itself cannot be built here; everything else of that build is at its version.
package storageprovisioner

import (
	_ "k8s.io/minikube/cmd/storage-provisioner"
)
