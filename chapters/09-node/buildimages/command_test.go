package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandNamesWhatIsMissing(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no versions", []string{"--out", t.TempDir()}, []string{"no kubernetes version", "no etcd version", "no CoreDNS version", "no pause version"}},
		{"no binaries", []string{"--out", t.TempDir(), "--binaries", t.TempDir(), "--kubernetes-version", "v1.37.2",
			"--etcd-version", "3.7.0-0", "--coredns-version", "v1.14.6", "--pause-version", "3.10.2"},
			[]string{"image registry.k8s.io/", "the image's binary: stat "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewCommand(context.Background())
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			require.Error(t, err)
			for _, want := range tt.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}
