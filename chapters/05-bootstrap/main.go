// Chapter 05 is the kubelet.Bootstrap interface, the whole of what startKubelet needs from a
// kubelet (pkg/kubelet/kubelet.go#L297-L306 (type Bootstrap interface)) — and a toy kubelet that
// implements it, started beside the real one on the same static pods.
//
// startKubelet (cmd/kubelet/app/server.go#L1341-L1355 (func startKubelet)) takes a Bootstrap
// and starts its sync loop and servers in goroutines. The toy is started the same way
// (toykubelet.Start), the real one through app.RunKubelet (realkubelet.Start); the chapter asks
// both for /pods and puts the answers side by side.
//
// Run it:
//
//	go run ./chapters/05-bootstrap
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewBootstrapCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
