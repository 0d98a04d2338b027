// Command nextrelease is `make next K8S=v1.38.0-beta.0`: a look at how this repository fares on
// another Kubernetes release, in a copy of the module, written up in one Markdown report. See
// command.go.
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
