package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// fakeBaseInputs makes BaseOptions.Bin and BaseOptions.CNI: for each program and CNI plugin, a
// small file whose content names it, so that each is told apart from the others.
func fakeBaseInputs(t *testing.T) BaseOptions {
	t.Helper()
	dir := t.TempDir()
	opts := BaseOptions{Bin: filepath.Join(dir, "bin"), CNI: filepath.Join(dir, "cni")}
	require.NoError(t, os.MkdirAll(opts.Bin, 0o755))
	require.NoError(t, os.MkdirAll(opts.CNI, 0o755))
	for _, p := range programs {
		require.NoError(t, os.WriteFile(filepath.Join(opts.Bin, p.name), []byte("program "+p.name+"\n"), 0o755))
	}
	for _, p := range cniPlugins {
		require.NoError(t, os.WriteFile(filepath.Join(opts.CNI, p), []byte("CNI plugin "+p+"\n"), 0o755))
	}
	return opts
}

// embeddedFiles are the files under kicbase/, by their path in the image.
func embeddedFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	require.NoError(t, fs.WalkDir(kicbaseFiles, "kicbase", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := kicbaseFiles.ReadFile(p)
		files[strings.TrimPrefix(p, "kicbase")] = data
		return err
	}))
	return files
}

func TestBaseFiles(t *testing.T) {
	opts := fakeBaseInputs(t)
	entries, err := baseFiles(opts)
	require.NoError(t, err)

	byPath := map[string]entry{}
	var paths []string
	for _, e := range entries {
		assert.NotContains(t, byPath, e.Path, "one entry a path")
		byPath[e.Path] = e
		paths = append(paths, e.Path)
	}
	assert.True(t, slices.IsSorted(paths), "entries in path order: %v", paths)
	for _, e := range entries {
		if parent := path.Dir(e.Path); parent != "/" {
			assert.True(t, byPath[parent].Mode.IsDir(), "%s: its directory %s comes with it", e.Path, parent)
		}
	}
	// file checks that a regular file is at p, with its mode and content.
	file := func(t *testing.T, p string, mode fs.FileMode, content []byte) {
		t.Helper()
		e, ok := byPath[p]
		require.True(t, ok, "%s is in the image", p)
		assert.Equal(t, mode, e.Mode, "%s's mode", p)
		data := e.Data
		if data == nil {
			var err error
			data, err = os.ReadFile(e.Source)
			require.NoError(t, err)
		}
		assert.Equal(t, string(content), string(data), "%s's content", p)
	}

	t.Run("programs", func(t *testing.T) {
		for _, p := range programs {
			file(t, p.path, 0o755, []byte("program "+p.name+"\n"))
		}
	})
	t.Run("CNI plugins where containerd's configuration looks", func(t *testing.T) {
		config := string(embeddedFiles(t)["/etc/containerd/config.toml"])
		binDir := regexp.MustCompile(`(?m)^\s*bin_dir\s*=\s*"([^"]+)"`).FindStringSubmatch(config)
		require.NotNil(t, binDir, "containerd's config.toml has the CNI bin_dir")
		for _, p := range cniPlugins {
			file(t, path.Join(binDir[1], p), 0o755, []byte("CNI plugin "+p+"\n"))
		}
	})
	t.Run("embedded files", func(t *testing.T) {
		// Executable: the entrypoint; read-only to root, as sudo demands: sudoers.d; the rest
		// is configuration anyone may read.
		special := map[string]fs.FileMode{
			"/usr/local/bin/entrypoint":           0o755,
			"/etc/sudoers.d/20-passwordless-sudo": 0o440,
		}
		embedded := embeddedFiles(t)
		require.NotEmpty(t, embedded)
		for p := range special {
			require.Contains(t, embedded, p, "the embedded files include %s", p)
		}
		for p, data := range embedded {
			mode, ok := special[p]
			if !ok {
				mode = 0o644
			}
			file(t, p, mode, data)
		}
	})
	t.Run("unit links", func(t *testing.T) {
		for link, target := range unitLinks {
			e, ok := byPath[link]
			require.True(t, ok, "%s is in the image", link)
			assert.Equal(t, fs.ModeSymlink|0o777, e.Mode, link)
			assert.Equal(t, target, e.Link, link)
		}
		// The units enabled here are units the image has: ssh's comes with Debian's
		// openssh-server (the root file system), the others with this layer.
		ssh := "/etc/systemd/system/multi-user.target.wants/ssh.service"
		assert.Equal(t, "/lib/systemd/system/ssh.service", unitLinks[ssh])
		for link, target := range unitLinks {
			if target == "/dev/null" || link == ssh {
				continue
			}
			assert.Contains(t, byPath, target, "%s is enabled: %s must be in the image", link, target)
		}
	})
	t.Run("units start programs the image has", func(t *testing.T) {
		execStart := regexp.MustCompile(`(?m)^ExecStart=(\S+)`)
		for p, data := range embeddedFiles(t) {
			if !strings.HasSuffix(p, ".service") {
				continue
			}
			m := execStart.FindSubmatch(data)
			require.NotNil(t, m, "%s has an ExecStart", p)
			assert.Contains(t, byPath, string(m[1]), "%s starts %s", p, m[1])
		}
	})
	t.Run("directories", func(t *testing.T) {
		for _, dir := range []string{"/etc/kubernetes/manifests", "/etc/cni/net.d"} {
			e, ok := byPath[dir]
			require.True(t, ok, "%s is in the image", dir)
			assert.Equal(t, fs.ModeDir|0o755, e.Mode, dir)
		}
	})
}

func TestBaseFilesNamesWhatIsMissing(t *testing.T) {
	type missing struct{ name, dir, want string }
	var tests []missing
	for _, p := range programs {
		tests = append(tests, missing{p.name, "bin", "the base image's " + p.name + ": "})
	}
	for _, p := range cniPlugins {
		tests = append(tests, missing{p, "cni", "the base image's CNI plugin " + p + ": "})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := fakeBaseInputs(t)
			dir := map[string]string{"bin": opts.Bin, "cni": opts.CNI}[tt.dir]
			require.NoError(t, os.Remove(filepath.Join(dir, tt.name)))
			_, err := baseFiles(opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.ErrorIs(t, err, fs.ErrNotExist)
		})
	}
}

func TestBaseConfig(t *testing.T) {
	config := baseConfig()
	assert.Equal(t, "linux", config.OS)
	assert.NotEmpty(t, config.Architecture)
	assert.Equal(t, "layers", config.RootFS.Type)
	assert.Equal(t, []string{"/usr/local/bin/entrypoint", "/sbin/init"}, config.Config.Entrypoint, "systemd, through the entrypoint")
	assert.Empty(t, config.Config.Cmd)
	assert.Equal(t, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "container=docker"}, config.Config.Env)
	assert.Equal(t, "SIGRTMIN+3", config.Config.StopSignal, "systemd's way to halt")
	assert.Equal(t, map[string]struct{}{"22/tcp": {}}, config.Config.ExposedPorts, "sshd, for minikube ssh")
	assert.Contains(t, embeddedFiles(t), config.Config.Entrypoint[0], "the entrypoint is one of the embedded files")
}

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

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func TestBuildBase(t *testing.T) {
	_, err := exec.LookPath("tar")
	tier.Require(t, "node", err) // the root file system's layer is written by tar
	opts := fakeBaseInputs(t)
	var owned bool
	opts.Rootfs, owned = fakeRootfs(t)
	opts.Out = filepath.Join(t.TempDir(), "node", "kicbase.tar")
	opts.Ref = "kubelet-walkthrough/kicbase:test"

	image, err := BuildBase(context.Background(), opts)
	require.NoError(t, err)
	assert.True(t, image.Built)
	assert.Equal(t, opts.Out, image.Archive)
	assert.Equal(t, opts.Ref, image.Ref)
	st, err := os.Stat(opts.Out)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), image.Size)
	assert.FileExists(t, opts.Out+".inputs", "the stamp beside the archive")
	assert.NoFileExists(t, opts.Out+".tmp")

	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(opts.Out) })
	require.NoError(t, err)
	require.Len(t, manifest, 1)
	assert.Equal(t, []string{opts.Ref}, manifest[0].RepoTags, "docker load names the image")
	config, layers := loadImage(t, opts.Out, opts.Ref)
	assert.Equal(t, baseConfig().Config, config.Config)
	require.Len(t, config.History, 2)
	assert.Equal(t, "kubelet-walkthrough lab: debootstrap "+Suite, config.History[0].CreatedBy)
	require.Len(t, layers, 2, "the root file system, then programs and configuration")

	t.Run("the root file system's layer", func(t *testing.T) {
		entries, order := layerEntries(t, layers[0])
		assert.Equal(t, []string{
			"/", "/bin", "/dev/", "/etc/", "/etc/os-release", "/proc/", "/sys/", "/usr/", "/usr/bin/", "/usr/bin/su",
		}, order, "/dev, /proc and /sys empty, the marker left out, in name order")
		assert.Equal(t, byte(tar.TypeSymlink), entries["/bin"].header.Typeflag)
		assert.Equal(t, "usr/bin", entries["/bin"].header.Linkname)
		assert.Equal(t, digestOf([]byte("ID=debian\n")), entries["/etc/os-release"].digest)
		for p, f := range entries {
			assert.Zero(t, f.header.ModTime.Unix(), "%s dated epoch (tar --mtime=@0)", p)
		}
		su := entries["/usr/bin/su"].header
		assert.Equal(t, int64(0o4755), su.Mode&0o7777, "the set-user-ID bit kept")
		t.Run("owners kept", func(t *testing.T) {
			if !owned {
				tier.Unavailable(t, "root", errors.New("not root: the fake root file system cannot have a file owned by uid 1000 (chown needs root)"))
			}
			assert.Equal(t, 1000, su.Uid)
			assert.Equal(t, 1000, su.Gid)
			assert.Zero(t, entries["/etc/os-release"].header.Uid, "root's files stay root's")
		})
	})

	t.Run("the programs' layer", func(t *testing.T) {
		entries, _ := layerEntries(t, layers[1])
		for _, p := range programs {
			require.Contains(t, entries, p.path)
			assert.Equal(t, fileDigest(t, filepath.Join(opts.Bin, p.name)), entries[p.path].digest, p.path)
			assert.Equal(t, int64(0o755), entries[p.path].header.Mode, p.path)
		}
		for _, p := range cniPlugins {
			require.Contains(t, entries, "/opt/cni/bin/"+p)
			assert.Equal(t, fileDigest(t, filepath.Join(opts.CNI, p)), entries["/opt/cni/bin/"+p].digest, p)
		}
		for p, data := range embeddedFiles(t) {
			require.Contains(t, entries, p)
			assert.Equal(t, digestOf(data), entries[p].digest, p)
		}
		assert.Equal(t, int64(0o440), entries["/etc/sudoers.d/20-passwordless-sudo"].header.Mode)
		for link, target := range unitLinks {
			require.Contains(t, entries, link)
			assert.Equal(t, target, entries[link].header.Linkname, link)
		}
		for _, dir := range []string{"/etc/kubernetes/manifests/", "/etc/cni/net.d/"} {
			require.Contains(t, entries, dir)
			assert.Equal(t, byte(tar.TypeDir), entries[dir].header.Typeflag, dir)
		}
		for p, f := range entries {
			assert.Zero(t, f.header.Uid, "%s owned by root", p)
			assert.Zero(t, f.header.Gid, "%s owned by root", p)
		}
	})
}

func TestBuildBaseIsIncremental(t *testing.T) {
	_, err := exec.LookPath("tar")
	tier.Require(t, "node", err)
	opts := fakeBaseInputs(t)
	opts.Rootfs, _ = fakeRootfs(t)
	opts.Out = filepath.Join(t.TempDir(), "kicbase.tar")
	opts.Ref = "kubelet-walkthrough/kicbase:test"
	ctx := context.Background()

	appendTo := func(file string) func() {
		return func() {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(file, append(data, "v2"...), 0o755))
		}
	}
	steps := []struct {
		name   string
		change func()
		built  bool
	}{
		{"first build", func() {}, true},
		{"nothing changed", func() {}, false},
		{"a program changed", appendTo(filepath.Join(opts.Bin, "containerd")), true},
		{"a CNI plugin changed", appendTo(filepath.Join(opts.CNI, "bridge")), true},
		{"the name changed", func() { opts.Ref = "kubelet-walkthrough/kicbase:test2" }, true},
		{"the archive was removed", func() { require.NoError(t, os.Remove(opts.Out)) }, true},
		{"the stamp was removed", func() { require.NoError(t, os.Remove(opts.Out+".inputs")) }, true},
		{"nothing changed since", func() {}, false},
	}
	for _, step := range steps {
		step.change()
		before, _ := os.ReadFile(opts.Out)
		image, err := BuildBase(ctx, opts)
		require.NoError(t, err, step.name)
		assert.Equal(t, step.built, image.Built, step.name)
		after, err := os.ReadFile(opts.Out)
		require.NoError(t, err, step.name)
		if step.built {
			// The archive holds the image as it is now: its name and its changed file.
			img, err := tarball.ImageFromPath(opts.Out, nil)
			require.NoError(t, err, step.name)
			layers, err := img.Layers()
			require.NoError(t, err, step.name)
			entries, _ := layerEntries(t, layers[len(layers)-1])
			assert.Equal(t, fileDigest(t, filepath.Join(opts.Bin, "containerd")), entries["/usr/local/bin/containerd"].digest, step.name)
			manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(opts.Out) })
			require.NoError(t, err, step.name)
			require.Len(t, manifest, 1, step.name)
			assert.Equal(t, []string{opts.Ref}, manifest[0].RepoTags, step.name)
		} else {
			assert.True(t, bytes.Equal(before, after), "%s: the archive left as it was", step.name)
		}
	}
}

func TestBuildBaseNeedsTodaysRootfs(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(root string)
	}{
		{"no marker", func(root string) { require.NoError(t, os.Remove(filepath.Join(root, rootfsDone))) }},
		{"made with another recipe", func(root string) {
			require.NoError(t, os.WriteFile(filepath.Join(root, rootfsDone), []byte("trixie\n"+strings.Join(rootfsPackages, ",")+"\n"), 0o644))
		}},
		{"no root file system", func(root string) { require.NoError(t, os.RemoveAll(root)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := fakeBaseInputs(t)
			opts.Rootfs, _ = fakeRootfs(t)
			opts.Out = filepath.Join(t.TempDir(), "kicbase.tar")
			opts.Ref = "kubelet-walkthrough/kicbase:test"
			tt.breakIt(opts.Rootfs)
			image, err := BuildBase(context.Background(), opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "no root file system at "+opts.Rootfs+" made with today's recipe")
			assert.False(t, image.Built)
			assert.NoFileExists(t, opts.Out)
		})
	}
}
