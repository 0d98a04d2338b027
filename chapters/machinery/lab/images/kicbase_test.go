package images

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBaseConfigIsKicbases holds baseConfig against the last stage of minikube's
// deploy/kicbase/Dockerfile at the version chapters/machinery/lab/minikube requires.
func TestBaseConfigIsKicbases(t *testing.T) {
	version := requiredVersion(t, filepath.Join(repoRoot, "chapters/machinery/lab/minikube/go.mod"), "k8s.io/minikube")
	data, err := os.ReadFile(filepath.Join(minikubeDir(t, version), "deploy/kicbase/Dockerfile"))
	require.NoError(t, err)
	instructions := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if keyword, args, ok := strings.Cut(line, " "); ok && slices.Contains([]string{"ENTRYPOINT", "STOPSIGNAL", "ENV", "EXPOSE"}, keyword) {
			instructions[keyword] = append(instructions[keyword], strings.TrimSpace(args))
		}
	}
	config := baseConfig().Config

	require.NotEmpty(t, instructions["ENTRYPOINT"], "kicbase has an ENTRYPOINT")
	var entrypoint []string
	require.NoError(t, json.Unmarshal([]byte(instructions["ENTRYPOINT"][len(instructions["ENTRYPOINT"])-1]), &entrypoint))
	assert.Equal(t, entrypoint, config.Entrypoint, "ENTRYPOINT")

	require.NotEmpty(t, instructions["STOPSIGNAL"], "kicbase has a STOPSIGNAL")
	assert.Equal(t, instructions["STOPSIGNAL"][len(instructions["STOPSIGNAL"])-1], config.StopSignal, "STOPSIGNAL")

	require.NotEmpty(t, instructions["ENV"], "kicbase sets ENV")
	for _, env := range instructions["ENV"] {
		assert.Contains(t, config.Env, env, "ENV")
	}
	require.NotEmpty(t, instructions["EXPOSE"], "kicbase has EXPOSE")
	for _, port := range instructions["EXPOSE"] {
		assert.Contains(t, config.ExposedPorts, port+"/tcp", "EXPOSE")
	}
}

// fakeRootfs is a root file system as MakeRootfs leaves it, in miniature: the marker with
// today's recipe, a link, a set-user-ID program owned by uid 1000 (owned only when the test runs
// as root: chown needs it), and contents in /dev, /proc and /sys that the image must leave out.
func fakeRootfs(t *testing.T) (root string, owned bool) {
	t.Helper()
	root = t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755)) // as debootstrap makes it; t.TempDir's is 0700
	for _, d := range []string{"etc", "usr/bin", "dev/pts", "proc/1", "sys/kernel"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.Symlink("usr/bin", filepath.Join(root, "bin")))
	for file, content := range map[string]string{
		"etc/os-release": "ID=debian\n", "usr/bin/su": "set-user-ID\n",
		"dev/console": "device\n", "dev/pts/0": "terminal\n", "proc/1/status": "process\n", "sys/kernel/version": "kernel\n",
		rootfsDone: rootfsRecipe(),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(root, file), []byte(content), 0o644))
	}
	su := filepath.Join(root, "usr/bin/su")
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(su, 1000, 1000))
		owned = true
	}
	// After chown, which clears the set-user-ID bit.
	require.NoError(t, os.Chmod(su, 0o755|fs.ModeSetuid))
	require.True(t, RootfsReady(root))
	return root, owned
}

// loadImage reads the image ref from the docker archive at path: its config and its layers.
func loadImage(t *testing.T, path, ref string) (*v1.ConfigFile, []v1.Layer) {
	t.Helper()
	tag, err := name.NewTag(ref)
	require.NoError(t, err)
	img, err := tarball.ImageFromPath(path, &tag)
	require.NoError(t, err)
	config, err := img.ConfigFile()
	require.NoError(t, err)
	layers, err := img.Layers()
	require.NoError(t, err)
	return config, layers
}

// tarFile is one entry of a layer, with its content's digest for a regular file.
type tarFile struct {
	header *tar.Header
	digest string
}

// layerEntries reads a layer: its entries by path ("/etc/", "/usr/bin/su", "/bin"), and the
// paths in the layer's order.
func layerEntries(t *testing.T, layer v1.Layer) (map[string]tarFile, []string) {
	t.Helper()
	rc, err := layer.Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	entries := map[string]tarFile{}
	var order []string
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		p := "/" + strings.TrimPrefix(strings.TrimPrefix(hdr.Name, "./"), "/")
		if p == "/." {
			p = "/"
		}
		f := tarFile{header: hdr}
		if hdr.Typeflag == tar.TypeReg {
			h := sha256.New()
			_, err := io.Copy(h, tr)
			require.NoError(t, err)
			f.digest = hex.EncodeToString(h.Sum(nil))
		}
		require.NotContains(t, entries, p, "one entry a path")
		entries[p] = f
		order = append(order, p)
	}
	return entries, order
}
