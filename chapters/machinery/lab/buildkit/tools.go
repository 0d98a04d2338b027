//go:build tools

// Package buildkit pins BuildKit's buildkitd and buildctl, which the lab's base image carries for
// `minikube image build` (as minikube's kicbase does): a Go module of its own, requiring only
// github.com/moby/buildkit at the version the lab builds, because buildkit's go.mod has exclude
// directives that `go install …@version` refuses, and a requiring module must repeat.
package buildkit

import (
	_ "github.com/moby/buildkit/cmd/buildctl"
	_ "github.com/moby/buildkit/cmd/buildkitd"
)
