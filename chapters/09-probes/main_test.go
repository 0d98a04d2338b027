package main

import (
	"os"
	"testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
)

// TestMain removes the root directories of the kubelets the package's tests started, last.
func TestMain(m *testing.M) {
	code := m.Run()
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}
