package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the program refuses before it asks anyone: each flag's mistake, named. The exec itself is
// rehearsed on real minikube (examples/workshop/rehearsal, exercise 17).
func TestFlags(t *testing.T) {
	ok := []string{"--node", "minikube", "--via=apiserver", "--token-file", "t", "-n", "exercise-17", "-c", "monitor", "target", "--", "nft", "list", "tables"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no command", []string{"--node", "minikube", "--via=kubelet", "--token-file", "t", "-c", "monitor", "target"}, "requires at least 2 arg(s)"},
		{"no dash", []string{"--node", "minikube", "--via=kubelet", "--token-file", "t", "-c", "monitor", "target", "nft"}, "give the pod, then -- and the command"},
		{"no node", ok[2:], "--node: the node the pod runs on"},
		{"another way", append([]string{"--node", "minikube", "--via=pods"}, ok[3:]...), `--via "pods": kubelet (its port) or apiserver (its node proxy)`},
		{"no token", append([]string{"--node", "minikube", "--via=kubelet"}, ok[5:]...), "--token-file: the identity's token"},
		{"no container", []string{"--node", "minikube", "--via=kubelet", "--token-file", "t", "target", "--", "nft"}, "-c: the container"},
		{"a kubelet's CA through the apiserver", append([]string{"--kubelet-ca-file", "ca.crt"}, ok...), "would have no effect with --via=apiserver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "/nonexistent") // never reached: the flags fail first
			cmd := NewNodeExecCommand(context.Background())
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
