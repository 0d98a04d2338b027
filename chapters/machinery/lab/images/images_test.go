package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layerFiles lists a layer as "path", "path/" for a directory, "path -> target" for a link, and
// the digests of regular files by path.
func layerFiles(t *testing.T, layer v1.Layer) (names []string, digests map[string]string) {
	t.Helper()
	rc, err := layer.Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	digests = map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.Zero(t, hdr.Uid, hdr.Name)
		assert.Zero(t, hdr.Gid, hdr.Name)
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			names = append(names, "/"+hdr.Name+" -> "+hdr.Linkname)
		case tar.TypeDir:
			names = append(names, "/"+hdr.Name)
		case tar.TypeReg:
			names = append(names, "/"+hdr.Name)
			h := sha256.New()
			_, err := io.Copy(h, tr)
			require.NoError(t, err)
			digests["/"+hdr.Name] = hex.EncodeToString(h.Sum(nil))
		default:
			t.Fatalf("%s: unexpected tar entry type %q", hdr.Name, hdr.Typeflag)
		}
	}
	return names, digests
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func TestBuild(t *testing.T) {
	f := newFixture(t)
	out := t.TempDir()
	images, err := Build(context.Background(), f.options(out))
	require.NoError(t, err)

	lib := "/lib/" + f.triplet + "/"
	loader := filepath.Base(f.interp)
	// What the loader and libc bring: the loader at its PT_INTERP path, libc where the loader
	// looks first, and libc's own need of the loader as a link to the copy already there.
	runtime := []string{"/lib/", "/lib/" + f.triplet + "/", lib + loader + " -> " + f.interp, lib + "libc.so.6"}
	var interpDirs []string
	for dir := filepath.Dir(f.interp); dir != "/"; dir = filepath.Dir(dir) {
		interpDirs = append([]string{dir + "/"}, interpDirs...)
	}
	libraries := append(append(runtime[:2:2], runtime[2:]...), append(interpDirs, f.interp)...)
	binaryLayer := func(path string) []string {
		var dirs []string
		for dir := filepath.Dir(path); dir != "/"; dir = filepath.Dir(dir) {
			dirs = append([]string{dir + "/"}, dirs...)
		}
		files := append([]string{"/tmp/"}, dirs...)
		return sortedCopy(append(files, path))
	}
	sbin := func(names ...string) (out []string) {
		for _, n := range names {
			out = append(out, "/usr/sbin/"+n)
		}
		return out
	}
	proxyLibraries := sortedCopy(append(append([]string{
		lib + "libmnl.so.0", lib + "libnftables.so.1", lib + "libxtables.so.12",
		"/usr/", "/usr/lib/", "/usr/lib/" + f.triplet + "/", "/usr/lib/" + f.triplet + "/xtables/",
		"/usr/lib/" + f.triplet + "/xtables/libxt_comment.so", "/usr/sbin/",
	}, libraries...), sbin(
		"nft", "xtables-legacy-multi", "xtables-nft-multi",
		"iptables -> xtables-nft-multi", "iptables-save -> xtables-nft-multi", "iptables-restore -> xtables-nft-multi",
		"ip6tables -> xtables-nft-multi", "ip6tables-save -> xtables-nft-multi", "ip6tables-restore -> xtables-nft-multi",
		"iptables-nft -> xtables-nft-multi", "iptables-nft-save -> xtables-nft-multi", "iptables-nft-restore -> xtables-nft-multi",
		"ip6tables-nft -> xtables-nft-multi", "ip6tables-nft-save -> xtables-nft-multi", "ip6tables-nft-restore -> xtables-nft-multi",
		"iptables-legacy -> xtables-legacy-multi", "iptables-legacy-save -> xtables-legacy-multi", "iptables-legacy-restore -> xtables-legacy-multi",
		"ip6tables-legacy -> xtables-legacy-multi", "ip6tables-legacy-save -> xtables-legacy-multi", "ip6tables-legacy-restore -> xtables-legacy-multi",
	)...))

	// archive is where minikube's image cache keeps the image, under cache/images/<arch>: the
	// reference with each ':' made '_' (minikube's localpath.SanitizeCacheDir).
	tests := []struct {
		name, ref, archive, path, user string
		layers                         [][]string
	}{
		{"kube-apiserver", "registry.k8s.io/kube-apiserver:v1.37.2", "registry.k8s.io/kube-apiserver_v1.37.2", "/usr/local/bin/kube-apiserver", "", [][]string{sortedCopy(libraries), binaryLayer("/usr/local/bin/kube-apiserver")}},
		{"kube-controller-manager", "registry.k8s.io/kube-controller-manager:v1.37.2", "registry.k8s.io/kube-controller-manager_v1.37.2", "/usr/local/bin/kube-controller-manager", "", [][]string{sortedCopy(libraries), binaryLayer("/usr/local/bin/kube-controller-manager")}},
		{"kube-scheduler", "registry.k8s.io/kube-scheduler:v1.37.2", "registry.k8s.io/kube-scheduler_v1.37.2", "/usr/local/bin/kube-scheduler", "", [][]string{sortedCopy(libraries), binaryLayer("/usr/local/bin/kube-scheduler")}},
		{"kube-proxy", "registry.k8s.io/kube-proxy:v1.37.2", "registry.k8s.io/kube-proxy_v1.37.2", "/usr/local/bin/kube-proxy", "", [][]string{proxyLibraries, binaryLayer("/usr/local/bin/kube-proxy")}},
		{"coredns", "registry.k8s.io/coredns/coredns:v1.14.6", "registry.k8s.io/coredns/coredns_v1.14.6", "/coredns", "", [][]string{binaryLayer("/coredns")}},
		{"pause", "registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause_3.10.2", "/pause", "65535:65535", [][]string{binaryLayer("/pause")}},
		{"etcd", "registry.k8s.io/etcd:3.7.0-0", "registry.k8s.io/etcd_3.7.0-0", "/usr/local/bin/etcd", "", [][]string{sortedCopy(libraries), binaryLayer("/usr/local/bin/etcd")}},
		// minikube's addon, after kubeadm's images: static, FROM scratch.
		{"storage-provisioner", "gcr.io/k8s-minikube/storage-provisioner:v5", "gcr.io/k8s-minikube/storage-provisioner_v5", "/storage-provisioner", "", [][]string{binaryLayer("/storage-provisioner")}},
	}
	require.Len(t, images, len(tests))
	var librariesLayer v1.Hash
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			image := images[i]
			assert.Equal(t, tt.ref, image.Ref, "kubeadm's order, then minikube's")
			assert.Equal(t, filepath.Join(out, tt.archive), image.Archive, "minikube's image cache layout")
			assert.Equal(t, tt.archive, CachePath(tt.ref))
			assert.True(t, image.Built)
			st, err := os.Stat(image.Archive)
			require.NoError(t, err)
			assert.Equal(t, st.Size(), image.Size)
			assert.FileExists(t, image.Archive+".inputs", "the stamp beside the archive")

			// The archive as an importer reads it: docker's manifest.json names the image.
			opener := func() (io.ReadCloser, error) { return os.Open(image.Archive) }
			manifest, err := tarball.LoadManifest(opener)
			require.NoError(t, err)
			require.Len(t, manifest, 1)
			assert.Equal(t, []string{tt.ref}, manifest[0].RepoTags)

			tag, err := name.NewTag(tt.ref)
			require.NoError(t, err)
			img, err := tarball.Image(opener, &tag)
			require.NoError(t, err)
			config, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, "linux", config.OS)
			assert.NotEmpty(t, config.Architecture)
			assert.Equal(t, "layers", config.RootFS.Type)
			assert.Equal(t, []string{tt.path}, config.Config.Entrypoint)
			assert.Empty(t, config.Config.Cmd)
			assert.Equal(t, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, config.Config.Env)
			assert.Equal(t, tt.user, config.Config.User)

			layers, err := img.Layers()
			require.NoError(t, err)
			require.Len(t, layers, len(tt.layers))
			var digests map[string]string
			for j, l := range layers {
				var names []string
				names, digests = layerFiles(t, l)
				assert.Equal(t, tt.layers[j], names, "layer %d", j)
			}
			assert.Equal(t, fileDigest(t, filepath.Join(f.binaries, tt.name)), digests[tt.path], "the binary, unchanged")

			if len(layers) == 2 && tt.name != "kube-proxy" {
				// The same libraries make the same layer, stored once by containerd.
				digest, err := layers[0].Digest()
				require.NoError(t, err)
				if librariesLayer == (v1.Hash{}) {
					librariesLayer = digest
				}
				assert.Equal(t, librariesLayer, digest)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestBuildIsIncremental(t *testing.T) {
	f := newFixture(t)
	out := t.TempDir()
	opts := f.options(out)
	ctx := context.Background()

	built := func(images []Image) map[string]bool {
		m := map[string]bool{}
		for _, image := range images {
			m[image.Name] = image.Built
		}
		return m
	}
	all := func(v bool) map[string]bool {
		return map[string]bool{"kube-apiserver": v, "kube-controller-manager": v, "kube-scheduler": v, "kube-proxy": v, "coredns": v, "pause": v, "etcd": v, "storage-provisioner": v}
	}
	only := func(names ...string) map[string]bool {
		m := all(false)
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	steps := []struct {
		name   string
		change func()
		want   map[string]bool
	}{
		{"first build", func() {}, all(true)},
		{"nothing changed", func() {}, all(false)},
		{"a binary changed", func() {
			p := filepath.Join(f.binaries, "kube-scheduler")
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, append(data, "v2"...), 0o755))
		}, only("kube-scheduler")},
		{"minikube's binary changed", func() {
			p := filepath.Join(f.binaries, "storage-provisioner")
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, append(data, "v2"...), 0o755))
		}, only("storage-provisioner")},
		{"a library changed", func() {
			p := filepath.Join(f.root, "usr/lib", f.triplet, "libnftables.so.1")
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, append(data, 0), 0o644))
		}, only("kube-proxy")},
		{"a version changed", func() { opts.Versions.Pause = "3.11" }, only("pause")},
		{"the storage-provisioner version changed", func() { opts.Versions.StorageProvisioner = "v6" }, only("storage-provisioner")},
		{"an archive was removed", func() { require.NoError(t, os.Remove(filepath.Join(out, "registry.k8s.io", "etcd_3.7.0-0"))) }, only("etcd")},
		{"a stamp was removed", func() {
			require.NoError(t, os.Remove(filepath.Join(out, "registry.k8s.io", "kube-apiserver_v1.37.2.inputs")))
		}, only("kube-apiserver")},
	}
	for _, step := range steps {
		step.change()
		images, err := Build(ctx, opts)
		require.NoError(t, err, step.name)
		assert.Equal(t, step.want, built(images), step.name)
	}
	// The cache holds each archive with its stamp, a new tag beside the old one as in minikube's
	// cache, and no temporary file.
	var names []string
	require.NoError(t, filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, p)
		names = append(names, filepath.ToSlash(rel))
		return err
	}))
	var want []string
	for _, archive := range []string{
		"gcr.io/k8s-minikube/storage-provisioner_v5", "gcr.io/k8s-minikube/storage-provisioner_v6",
		"registry.k8s.io/coredns/coredns_v1.14.6", "registry.k8s.io/etcd_3.7.0-0", "registry.k8s.io/kube-apiserver_v1.37.2",
		"registry.k8s.io/kube-controller-manager_v1.37.2", "registry.k8s.io/kube-proxy_v1.37.2", "registry.k8s.io/kube-scheduler_v1.37.2",
		"registry.k8s.io/pause_3.10.2", "registry.k8s.io/pause_3.11",
	} {
		want = append(want, archive, archive+".inputs")
	}
	assert.Equal(t, want, names)
}

func TestBuildFailsNamingWhatIsMissing(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(f *fixture, opts *Options)
		want    string
	}{
		{"no binary", func(f *fixture, _ *Options) { require.NoError(t, os.Remove(filepath.Join(f.binaries, "etcd"))) },
			"image registry.k8s.io/etcd:3.7.0-0: the image's binary: stat "},
		{"not an ELF file", func(f *fixture, _ *Options) {
			require.NoError(t, os.WriteFile(filepath.Join(f.binaries, "pause"), []byte("#!/bin/sh\n"), 0o755))
		}, "pause is not an ELF executable or library"},
		{"a library missing in the root", func(f *fixture, _ *Options) {
			require.NoError(t, os.Remove(filepath.Join(f.root, "usr/lib", f.triplet, "libc.so.6")))
		}, "needs libc.so.6, which is in none of /lib/"},
		{"no iptables in the root", func(f *fixture, _ *Options) {
			require.NoError(t, os.Remove(filepath.Join(f.root, "usr/sbin/iptables-restore")))
		}, "image registry.k8s.io/kube-proxy:v1.37.2: /usr/sbin/iptables-restore in the library root"},
		{"no xtables extensions in the root", func(f *fixture, _ *Options) {
			require.NoError(t, os.RemoveAll(filepath.Join(f.root, "usr/lib", f.triplet, "xtables")))
		}, "no xtables directory in the library root"},
		{"no storage-provisioner binary", func(f *fixture, _ *Options) {
			require.NoError(t, os.Remove(filepath.Join(f.binaries, "storage-provisioner")))
		}, "image gcr.io/k8s-minikube/storage-provisioner:v5: the image's binary: stat "},
		{"no version", func(_ *fixture, opts *Options) { opts.Versions.CoreDNS = "" }, "no CoreDNS version"},
		{"no storage-provisioner version", func(_ *fixture, opts *Options) { opts.Versions.StorageProvisioner = "" }, "no storage-provisioner version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			opts := f.options(t.TempDir())
			tt.breakIt(f, &opts)
			_, err := Build(context.Background(), opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"usr/lib/x", "etc/alternatives", "usr/sbin"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "usr/lib/x/libc.so.6"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "usr/sbin/multi"), nil, 0o755))
	links := map[string]string{
		"lib":                   "usr/lib",                // relative, at the top
		"usr/sbin/tool":         "/etc/alternatives/tool", // absolute: from the root, not the host
		"etc/alternatives/tool": "/usr/sbin/tool-nft",
		"usr/sbin/tool-nft":     "multi",
		"usr/sbin/up":           "../lib/x/libc.so.6",
		"usr/sbin/escape":       "../../../../usr/sbin/multi", // .. stops at the root
		"loop1":                 "loop2",
		"loop2":                 "loop1",
	}
	for link, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(root, link)))
	}
	r := newRootFiles(root)
	tests := []struct{ name, want, err string }{
		{"/lib/x/libc.so.6", "/usr/lib/x/libc.so.6", ""},
		{"/usr/sbin/tool", "/usr/sbin/multi", ""},
		{"/usr/sbin/up", "/usr/lib/x/libc.so.6", ""},
		{"/usr/sbin/escape", "/usr/sbin/multi", ""},
		{"/sbin/tool", "", "no such file or directory"},
		{"/loop1", "", "too many levels of symbolic links"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.resolve(tt.name)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func ExampleSpecs() {
	for _, spec := range Specs(Versions{Kubernetes: "v1.37.2", Etcd: "3.7.0-0", CoreDNS: "v1.14.6", Pause: "3.10.2", StorageProvisioner: "v5"}) {
		fmt.Printf("%-48s %s\n", spec.Ref, spec.Path)
	}
	// Output:
	// registry.k8s.io/kube-apiserver:v1.37.2           /usr/local/bin/kube-apiserver
	// registry.k8s.io/kube-controller-manager:v1.37.2  /usr/local/bin/kube-controller-manager
	// registry.k8s.io/kube-scheduler:v1.37.2           /usr/local/bin/kube-scheduler
	// registry.k8s.io/kube-proxy:v1.37.2               /usr/local/bin/kube-proxy
	// registry.k8s.io/coredns/coredns:v1.14.6          /coredns
	// registry.k8s.io/pause:3.10.2                     /pause
	// registry.k8s.io/etcd:3.7.0-0                     /usr/local/bin/etcd
	// gcr.io/k8s-minikube/storage-provisioner:v5       /storage-provisioner
}
