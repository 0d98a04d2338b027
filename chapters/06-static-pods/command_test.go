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
		{"empty: not the working directory", "", `--manifests "": name the directory that holds the manifests`},
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

// load -o json and -o yaml print a list as kubectl does: with no pods, "items": [] (items: []
// in YAML), never null — also when every file was skipped.
func TestLoadEmptyList(t *testing.T) {
	onlyBroken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(onlyBroken, "no-name.yaml"), []byte("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    image: i\n"), 0o644))
	const json = "{\n    \"kind\": \"PodList\",\n    \"apiVersion\": \"v1\",\n    \"metadata\": {},\n    \"items\": []\n}\n"
	const yaml = "apiVersion: v1\nitems: []\nkind: PodList\nmetadata: {}\n"
	tests := []struct {
		name, manifests, output, want, wantErrOut string
	}{
		{"json, empty directory", t.TempDir(), "json", json, ""},
		{"yaml, empty directory", t.TempDir(), "yaml", yaml, ""},
		{"json, every file skipped", onlyBroken, "json", json, "skipped no-name.yaml: invalid pod: name is needed for the pod\n"},
		{"yaml, every file skipped", onlyBroken, "yaml", yaml, "skipped no-name.yaml: invalid pod: name is needed for the pod\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewStaticPodsCommand(context.Background())
			var out, errOut bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SetArgs([]string{"load", "--manifests", tt.manifests, "-o", tt.output})
			require.NoError(t, cmd.Execute())
			assert.Equal(t, tt.want, out.String())
			assert.Equal(t, tt.wantErrOut, errOut.String())
		})
	}
}

// Bad flag values are refused before anything is read or watched: a re-list period of 0 used to
// panic in the ticker, a negative --for to run until Ctrl-C, a node name the apiserver refuses to
// name pods nothing could serve.
func TestBadFlags(t *testing.T) {
	manifests := filepath.Join("..", "..", "examples", "static-pods")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"a period of 0", []string{"watch", "--file-check-frequency", "0"}, "--file-check-frequency 0s: must be more than 0"},
		{"a negative period", []string{"watch", "--file-check-frequency", "-1s"}, "--file-check-frequency -1s: must be more than 0"},
		{"a negative --for", []string{"watch", "--for", "-1s"}, "--for -1s: must be 0 (until Ctrl-C) or more"},
		{"an upper-case node name", []string{"watch", "--for", "1s", "--node-name", "Node1"}, `--node-name "Node1": a lowercase RFC 1123 subdomain`},
		{"an empty node name", []string{"load", "--node-name", ""}, `--node-name "": must not be empty`},
		{"a node name with _", []string{"load", "--node-name", "my_node"}, `--node-name "my_node": a lowercase RFC 1123 subdomain`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewStaticPodsCommand(context.Background())
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append(tt.args, "--manifests", manifests))
			err := cmd.Execute()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, out.String(), "Watching", "nothing started")
		})
	}
}
