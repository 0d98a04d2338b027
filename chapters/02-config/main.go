// Chapter 02 is the kubelet's configuration: the --config file, read into a
// KubeletConfiguration by the same loader, defaulting and validation that the kubelet's
// loadConfigFile uses (cmd/kubelet/app/server.go#L453-L482 (func loadConfigFile)), and the
// command line applied over it again, because a flag beats the file
// (cmd/kubelet/app/server.go#L428-L451 (func kubeletConfigFlagPrecedence)).
//
// Run it:
//
//	go run ./chapters/02-config
//	go run ./chapters/02-config -- --port=30000 --read-only-port=10255
//	go run ./chapters/02-config --config examples/kubelet-config-broken.yaml
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	command := NewConfigCommand(context.Background())
	code := program.Run(command)
	os.Exit(code)
}
