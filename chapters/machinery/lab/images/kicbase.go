package images

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/klog/v2"
)

// The lab's base image: what minikube's docker driver runs as its node, in place of kicbase
// (deploy/kicbase/Dockerfile in minikube's repository), made here from pinned sources. It has
// what minikube asks of kicbase for the containerd runtime: systemd as PID 1, sshd and the
// `docker` user, containerd with a configuration minikube knows how to edit, runc, crictl, the
// CNI plugins, BuildKit for `minikube image build`, and an entrypoint of its own.

// kicbaseFiles are the files of the image that are not programs: configuration, units, the
// entrypoint. Their paths in the image are their paths under kicbase/.
//
//go:embed kicbase
var kicbaseFiles embed.FS

// BaseOptions says where BuildBase finds its inputs and writes the archive.
type BaseOptions struct {
	// Rootfs is the root file system MakeRootfs made.
	Rootfs string
	// Bin holds containerd, containerd-shim-runc-v2, ctr, runc, runcshim, crictl, buildkitd and
	// buildctl; CNI the CNI plugins.
	Bin, CNI string
	// Out is the docker archive to write; Ref the image's name.
	Out, Ref string
}

// programs are the base image's binaries: the name in BaseOptions.Bin, the path in the image.
var programs = []struct{ name, path string }{
	{"containerd", "/usr/local/bin/containerd"},
	{"containerd-shim-runc-v2", "/usr/local/bin/containerd-shim-runc-v2"},
	{"ctr", "/usr/local/bin/ctr"},
	{"crictl", "/usr/local/bin/crictl"},
	// runc is found on PATH (by containerd's shim, and by a reader typing it): the shim comes
	// first, in /usr/local/sbin, and execs the real runc beside it only as far as this machine
	// allows (see chapters/machinery/lab/runcshim).
	{"runcshim", "/usr/local/sbin/runc"},
	{"runc", "/usr/local/sbin/runc.real"},
	{"buildkitd", "/usr/local/bin/buildkitd"},
	{"buildctl", "/usr/local/bin/buildctl"},
}

// cniPlugins are the plugins of minikube's bridge configuration, the lab's CNI
// (pkg/minikube/cni/bridge.go: bridge with host-local, portmap, firewall), ptp, which kindnet's
// configuration (minikube's default on a laptop) names, and the loopback every pod needs. kicbase
// ships every plugin of the release; these are the ones either configuration runs.
var cniPlugins = []string{"ptp", "bridge", "host-local", "loopback", "portmap", "firewall"}

// units enabled or masked in the image, as symbolic links.
var unitLinks = map[string]string{
	"/etc/systemd/system/multi-user.target.wants/ssh.service":  "/lib/systemd/system/ssh.service",
	"/etc/systemd/system/sockets.target.wants/buildkit.socket": "/usr/local/lib/systemd/system/buildkit.socket",
	// The other runtimes kicbase carries, which this image does not: minikube stops and disables
	// them when it starts containerd, and finds them masked.
	"/etc/systemd/system/docker.socket":      "/dev/null",
	"/etc/systemd/system/docker.service":     "/dev/null",
	"/etc/systemd/system/cri-docker.socket":  "/dev/null",
	"/etc/systemd/system/cri-docker.service": "/dev/null",
	"/etc/systemd/system/crio.service":       "/dev/null",
	// Units that would change the machine rather than the node, or do nothing in a container.
	"/etc/systemd/system/systemd-binfmt.service":        "/dev/null",
	"/etc/systemd/system/sys-kernel-debug.mount":        "/dev/null",
	"/etc/systemd/system/sys-kernel-tracing.mount":      "/dev/null",
	"/etc/systemd/system/sys-kernel-config.mount":       "/dev/null",
	"/etc/systemd/system/sys-fs-fuse-connections.mount": "/dev/null",
	"/etc/systemd/system/apt-daily.timer":               "/dev/null",
	"/etc/systemd/system/apt-daily-upgrade.timer":       "/dev/null",
	"/etc/systemd/system/dpkg-db-backup.timer":          "/dev/null",
	"/etc/systemd/system/e2scrub_all.timer":             "/dev/null",
	"/etc/systemd/system/getty@tty1.service":            "/dev/null",
	"/etc/systemd/system/console-getty.service":         "/dev/null",
}

// baseFiles lists the image's second layer: programs, CNI plugins, embedded files, unit links.
func baseFiles(opts BaseOptions) ([]entry, error) {
	var entries []entry
	for _, p := range programs {
		source := filepath.Join(opts.Bin, p.name)
		if _, err := os.Stat(source); err != nil {
			return nil, fmt.Errorf("the base image's %s: %w", p.name, err)
		}
		entries = append(entries, entry{Path: p.path, Source: source, Mode: 0o755})
	}
	for _, p := range cniPlugins {
		source := filepath.Join(opts.CNI, p)
		if _, err := os.Stat(source); err != nil {
			return nil, fmt.Errorf("the base image's CNI plugin %s: %w", p, err)
		}
		entries = append(entries, entry{Path: "/opt/cni/bin/" + p, Source: source, Mode: 0o755})
	}
	err := fs.WalkDir(kicbaseFiles, "kicbase", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := kicbaseFiles.ReadFile(p)
		if err != nil {
			return err
		}
		imagePath := strings.TrimPrefix(p, "kicbase")
		mode := fs.FileMode(0o644)
		switch {
		case strings.HasPrefix(imagePath, "/usr/local/bin/"):
			mode = 0o755
		case strings.HasPrefix(imagePath, "/etc/sudoers.d/"):
			mode = 0o440
		}
		entries = append(entries, entry{Path: imagePath, Data: data, Mode: mode})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for link, target := range unitLinks {
		entries = append(entries, entry{Path: link, Link: target, Mode: fs.ModeSymlink | 0o777})
	}
	// kubeadm writes the control plane's manifests here; kicbase makes the directory. minikube
	// looks for CNI configurations to disable in /etc/cni/net.d (kicbase's packages make it).
	entries = append(entries, entry{Path: "/etc/kubernetes/manifests", Mode: fs.ModeDir | 0o755},
		entry{Path: "/etc/cni/net.d", Mode: fs.ModeDir | 0o755})
	return withParents(entries), nil
}

// baseConfig is the image's config, kicbase's: systemd (through the entrypoint), told it runs
// in a container, stopped by SIGRTMIN+3.
func baseConfig() *v1.ConfigFile {
	return &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint:   []string{"/usr/local/bin/entrypoint", "/sbin/init"},
			Env:          []string{"PATH=" + PATH, "container=docker"},
			StopSignal:   "SIGRTMIN+3",
			ExposedPorts: map[string]struct{}{"22/tcp": {}},
		},
	}
}

// rootfsLayer is the root file system as one layer: owners, modes, set-user-ID bits and file
// capabilities as debootstrap left them; /dev, /proc and /sys empty (the container runtime mounts
// its own).
func rootfsLayer(dir string) (v1.Layer, error) {
	return tarLayer("--xattrs", "--xattrs-include=security.capability", "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*",
		"--exclude=./"+rootfsDone, "--exclude=./"+rootfsMaking, "-C", dir, ".")
}

// tarLayer is one layer, written by tar with args: numeric owners, files in name order, every
// time the epoch's.
func tarLayer(args ...string) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		cmd := exec.Command("tar", append([]string{"--create", "--file=-", "--numeric-owner", "--sort=name", "--mtime=@0"}, args...)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return &waitCloser{ReadCloser: out, cmd: cmd, stderr: &stderr}, nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
}

// waitCloser is tar's output. Its end is tar's: a tar that failed ends the stream with its
// error instead of EOF (the image library reads a layer to its end, but ignores Close's error).
type waitCloser struct {
	io.ReadCloser
	cmd    *exec.Cmd
	stderr *strings.Builder
	waited bool
	err    error
}

func (w *waitCloser) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if err == io.EOF {
		if werr := w.wait(); werr != nil {
			return n, werr
		}
	}
	return n, err
}

func (w *waitCloser) wait() error {
	if !w.waited {
		w.waited = true
		if err := w.cmd.Wait(); err != nil {
			w.err = fmt.Errorf("tar: %w: %s", err, w.stderr.String())
		}
	}
	return w.err
}

func (w *waitCloser) Close() error {
	_, _ = io.Copy(io.Discard, w.ReadCloser)
	return w.wait()
}

// BuildBase writes the base image's archive, unless its inputs have not changed since it was
// last written. It returns the archive and whether it wrote it.
func BuildBase(ctx context.Context, opts BaseOptions) (Image, error) {
	logger := klog.FromContext(ctx).WithValues("image", opts.Ref)
	image := Image{Spec: Spec{Name: "kicbase", Ref: opts.Ref}, Archive: opts.Out}
	for flag, value := range map[string]string{"root file system": opts.Rootfs, "programs directory": opts.Bin,
		"CNI plugins directory": opts.CNI, "archive": opts.Out, "image name": opts.Ref} {
		if value == "" {
			return image, fmt.Errorf("the base image needs its %s", flag)
		}
	}
	if _, err := name.NewTag(opts.Ref); err != nil {
		return image, fmt.Errorf("the base image's name: %w", err)
	}
	if !RootfsReady(opts.Rootfs) {
		return image, fmt.Errorf("no root file system at %s made with today's recipe (make node-rootfs)", opts.Rootfs)
	}
	// The root file system's marker is written last when it is made: its time says which one
	// this is, so that one made again (newer packages, same recipe) makes the image again.
	made, err := os.Stat(filepath.Join(opts.Rootfs, rootfsDone))
	if err != nil {
		return image, err
	}
	files, err := baseFiles(opts)
	if err != nil {
		return image, err
	}
	config := baseConfig()
	h := sha256.New()
	enc := json.NewEncoder(h)
	if err := enc.Encode([]any{layoutVersion, opts.Ref, config, rootfsRecipe(), made.ModTime().UnixNano()}); err != nil {
		return image, err
	}
	if err := digestEntries(enc, "files", files); err != nil {
		return image, err
	}
	key := hex.EncodeToString(h.Sum(nil))
	if size, ok := upToDate(opts.Out, key); ok {
		image.Size = size
		return image, nil
	}
	start := time.Now()
	rootfs, err := rootfsLayer(opts.Rootfs)
	if err != nil {
		return image, err
	}
	ours, err := tarball.LayerFromOpener(layer{name: "files", entries: files}.opener(), tarball.WithCompressedCaching)
	if err != nil {
		return image, err
	}
	if image.Size, err = writeImage(opts.Out, key, opts.Ref, config, []madeLayer{
		{rootfs, "debootstrap " + Suite}, {ours, "kubelet-walkthrough's programs and configuration"},
	}); err != nil {
		return image, err
	}
	image.Built = true
	logger.V(1).Info("Built the base image", "archive", opts.Out, "bytes", image.Size, "took", time.Since(start))
	return image, nil
}
