package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// load: exit 0 with the pods when the directory is readable, a clear error when it is not.
func TestLoadErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pod.yaml")
	require.NoError(t, os.WriteFile(file, []byte("kind: Pod"), 0o644))
	tests := []struct {
		name, manifests, wantErr string
	}{
		{"missing", filepath.Join(t.TempDir(), "nope"), "does not exist"},
		{"a file", file, "is not a directory: --manifests takes the directory"},
		{"readable and empty", t.TempDir(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewStaticPodsCommand(context.Background())
			var out, errOut bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SetArgs([]string{"load", "--manifests", tt.manifests})
			err := cmd.Execute()
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, "NAMESPACE   NAME   UID   CONTAINERS\n", out.String())
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
	// Permission denied cannot be made as root (this test's usual user), so the wording is
	// checked on the error itself.
	err := readError("/etc/kubernetes/manifests", fmt.Errorf("open: %w", fs.ErrPermission))
	assert.Equal(t, "cannot read manifests directory /etc/kubernetes/manifests: permission denied (the kubelet runs as root; try sudo, or a copy you can read)", err.Error())
}
