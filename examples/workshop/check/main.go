// Command check says whether a workshop exercise is done: it inspects the cluster of the current
// kubeconfig context and your answers, and prints PASS or what is missing.
//
//	go run ./examples/workshop/check 1
//	make check EX=1
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
)

func main() {
	command := NewCheckCommand(context.Background())
	code := cli.Run(command)
	os.Exit(code)
}
