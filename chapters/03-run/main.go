// Chapter 03 walks app.Run and run, the function that turns a parsed configuration into a
// running node agent (cmd/kubelet/app/server.go#L542-L556 (func Run),
// cmd/kubelet/app/server.go#L656-L1012 (func run)).
//
// run takes about twenty steps, in a fixed order. This chapter lists each with its lines, and
// executes the steps that are safe on a laptop with the real functions, against the same
// configuration chapter 02 loads. The others — a container runtime, cAdvisor, cgroups, the OOM
// score of this process — it explains, and names the chapter that gets past them.
//
// Run it:
//
//	go run ./chapters/03-run
//	go run ./chapters/03-run -- --kubeconfig=/etc/kubernetes/kubelet.conf
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewRunCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
