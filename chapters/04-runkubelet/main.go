// Chapter 04 runs the real kubelet, in this process, through the function the kubelet binary
// ends in: app.RunKubelet (cmd/kubelet/app/server.go#L1285-L1339 (func RunKubelet)).
//
// RunKubelet calls createAndInitKubelet (cmd/kubelet/app/server.go#L1357-L1403 (func createAndInitKubelet)),
// which builds the kubelet with kubelet.NewMainKubelet and returns it as a kubelet.Bootstrap after
// BirthCry and StartGarbageCollection; then startKubelet
// (cmd/kubelet/app/server.go#L1341-L1355 (func startKubelet)) starts Bootstrap.Run — the sync
// loop fed by the static pod files — and the HTTP servers. The realkubelet package gives it a
// fake container runtime, the way a kubemark hollow node does, so no root, cgroups or
// containerd are needed. This chapter then asks the kubelet what it runs, on its read-only
// port's /pods, and serves until Ctrl-C.
//
// Run it:
//
//	go run ./chapters/04-runkubelet
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewRunKubeletCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
