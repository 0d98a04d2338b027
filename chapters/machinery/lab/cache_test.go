package lab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCachedImagesConfig: minikube's configuration lists the kindnetd image of the cache as
// `minikube cache add` lists one, and the lab does not start without it.
func TestCachedImagesConfig(t *testing.T) {
	cache := t.TempDir()
	_, err := cachedImagesConfig(cache)
	require.ErrorContains(t, err, "no kindnetd image in minikube's cache")

	dir := filepath.Join(cache, "images", "amd64", "docker.io", "kindest")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, name := range []string{"kindnetd_v20260213-ea8e5717", "kindnetd_v20260213-ea8e5717.inputs", "kindnetd_v1.tmp"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	config, err := cachedImagesConfig(cache)
	require.NoError(t, err)
	assert.JSONEq(t, `{"cache": {"docker.io/kindest/kindnetd:v20260213-ea8e5717": null}}`, string(config))
}
