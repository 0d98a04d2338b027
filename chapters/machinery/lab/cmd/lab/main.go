// The lab's command: it makes what real minikube needs here offline (`rootfs`, `images`,
// `base-image`: make node-components runs them) and runs commands in a lab (`run`: a Docker
// engine of its own, minikube's home and cache, its environment). See chapters/machinery/lab/README.md.
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

func main() {
	command := lab.NewCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
