package minicluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Whatever holds a credential — the CA's and the clients' keys, the admin kubeconfig, the
// kubelets' root directories with their own files — is readable by this user only: keys and
// kubeconfig 0600, in directories 0700.
func TestCredentialsPrivate(t *testing.T) {
	c := cluster(t)
	keys, err := filepath.Glob(filepath.Join(c.Dir, "pki", "*.key"))
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	tests := []struct {
		path string
		want os.FileMode
	}{
		{c.Dir, 0o700},
		{filepath.Join(c.Dir, "pki"), 0o700},
		{c.Kubeconfig, 0o600},
	}
	for _, key := range keys {
		tests = append(tests, struct {
			path string
			want os.FileMode
		}{key, 0o600})
	}
	for _, n := range c.Nodes {
		tests = append(tests, struct {
			path string
			want os.FileMode
		}{n.Kubelet.RootDir, 0o700})
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			info, err := os.Stat(tt.path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, info.Mode().Perm())
		})
	}
}
