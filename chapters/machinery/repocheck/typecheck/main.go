// Command typecheck type-checks Go packages for another platform from their source, without
// compiling them: make verify-platforms' proof that the chapters that run on macOS and Windows
// still build there. See typecheck.go.
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := newCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
