package main

import (
	"os"
	"testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
)

// TestMain removes, after the tests, what a stopped kubelet's pod workers made again in their
// root directories: the command's tests validate flags and start none today, but the package
// links the kubelet, and a test that starts one must not leave TMPDIR dirty.
func TestMain(m *testing.M) {
	code := m.Run()
	realkubelet.RemoveRootDirs()
	os.Exit(code)
}
