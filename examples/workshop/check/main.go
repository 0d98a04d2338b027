// Command check says whether a workshop exercise is done: it inspects the cluster of the current
// kubeconfig context and your answers, and prints PASS or what is missing. It exits 1 until the
// exercise passes; like kubectl, it prints errors as "error: …" rather than as log lines.
//
//	go run ./examples/workshop/check 1
//	make check EX=1
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := NewCheckCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
