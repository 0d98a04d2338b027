package images

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/dockerd"
)

// The base image's root file system: Debian bookworm, as minikube's kicbase is today, made with
// debootstrap with the packages kicbase installs that a node with containerd uses (kicbase also
// carries Docker, cri-dockerd, CRI-O, podman and nerdctl, for its other runtimes), and the
// changes kicbase's Dockerfile makes to it: the `docker` user minikube logs in as, with
// passwordless sudo; systemd without the units a container does not need.

// Suite is the Debian release of the base image (kicbase v0.0.50: debian:bookworm-slim).
const Suite = "bookworm"

// rootfsPackages are installed on top of debootstrap's minimal base.
var rootfsPackages = []string{
	"systemd", "systemd-sysv", "dbus", // PID 1, systemctl, journalctl
	"conntrack", "iptables", "nftables", "iproute2", "ethtool", "socat", "util-linux", "mount", "ebtables", "kmod", // kubeadm's preflight, kube-proxy
	"libseccomp2", "pigz", "lz4", "bash", "ca-certificates", "curl", "rsync", "openssl", "procps", "less",
	"iputils-ping", "netcat-openbsd", "vim-tiny",
	"sudo", "openssh-server", // minikube's way in: ssh as docker, then sudo
}

// rootfsChanges is what kicbase's Dockerfile does to its packages, run in the root file system.
// Changing it (or the packages) makes the root file system again.
var rootfsChanges = []string{
	// minikube ssh logs in as docker (kic.go), who may sudo without a password.
	"groupadd -f docker",
	"useradd --create-home --shell /bin/bash --gid docker --groups sudo docker",
	"passwd --delete docker",
	"install -d -o docker -g docker -m 0700 /home/docker/.ssh",
	// buildctl talks to BuildKit's socket, group buildkit.
	"groupadd --system buildkit",
	"usermod --append --groups buildkit docker",
	// systemd starts only what a node needs: kicbase removes the rest of what packages enable.
	"rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* /lib/systemd/system/local-fs.target.wants/*" +
		" /lib/systemd/system/sockets.target.wants/*udev* /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*" +
		" /lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
	// What a node does not need: downloaded packages, package lists, documentation.
	"rm -rf /var/cache/apt/archives/*.deb /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/*",
	// Each container makes its own machine ID (the entrypoint).
	": > /etc/machine-id",
}

// rootfsDone marks a complete root file system; it holds what it was made with.
const rootfsDone = ".kubelet-walkthrough-rootfs"

// rootfsMaking marks a root file system being made: MakeRootfs writes it into the directory
// before debootstrap runs there, and removes it after rootfsDone is written. A directory with
// either marker is one MakeRootfs made; only such a directory (or a new or empty one) is
// removed to make a root file system again.
const rootfsMaking = ".kubelet-walkthrough-rootfs-in-progress"

// CheckRootfsDir says whether MakeRootfs may remove dir to make a root file system there: a
// new or empty directory, or one holding MakeRootfs's own marker (finished, or in progress
// when a debootstrap stopped). Any other directory is refused — one that merely holds an entry
// named debootstrap too (/usr/sbin does): it is not the lab's to remove.
func CheckRootfsDir(dir string) error {
	if dir == "" {
		return errors.New("name a directory")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) == 0:
		return nil
	}
	for _, mark := range []string{rootfsDone, rootfsMaking} {
		if info, err := os.Lstat(filepath.Join(dir, mark)); err == nil && info.Mode().IsRegular() {
			return nil
		}
	}
	return errors.New("a directory that lab rootfs did not make, and it would remove it to make one: name a new directory (lab rootfs marks its own with " + rootfsMaking + ", then " + rootfsDone + ")")
}

// A Recipe makes a root file system: debootstrap's minimal base of Suite with Packages, then
// each of Changes run in it by /bin/sh. The base image's is kicbase's; the run image's
// (runimage.go) the Go image's.
type Recipe struct {
	// Image names what the root file system is for, in what MakeRootfs prints.
	Image             string
	Packages, Changes []string
}

// kicbaseRecipe is the base image's recipe (read when used: tests change its parts).
func kicbaseRecipe() Recipe {
	return Recipe{Image: "the base image", Packages: rootfsPackages, Changes: rootfsChanges}
}

// text is what a root file system made with r records of it: its marker's content, the key of
// its copy in the cache.
func (r Recipe) text() string {
	return Suite + "\n" + strings.Join(r.Packages, ",") + "\n" + strings.Join(r.Changes, "\n") + "\n"
}

func rootfsRecipe() string { return kicbaseRecipe().text() }

// RootfsReady says whether dir holds the base image's root file system made with today's recipe.
func RootfsReady(dir string) bool { return kicbaseRecipe().Ready(dir) }

// Ready says whether dir holds a root file system made with r as it is today.
func (r Recipe) Ready(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, rootfsDone))
	return err == nil && string(data) == r.text()
}

// What MakeRootfs runs, and how it tells it may (tests replace them).
var (
	lookPath = exec.LookPath
	realRoot = dockerd.RealRoot
	runTool  = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return exec.CommandContext(ctx, name, args...).CombinedOutput()
	}
)

// RootfsCacheAge is how long a root file system in the cache is used again: after a week
// debootstrap makes it anew, with the mirror's updates of the week.
const RootfsCacheAge = 7 * 24 * time.Hour

// DefaultRootfsCache is where MakeRootfs keeps a copy of each root file system it made: this
// user's cache directory (as Go's build cache: $XDG_CACHE_HOME, else ~/.cache, on Linux), so that
// a new clone of the repository unpacks it in seconds instead of minutes of debootstrap (mostly
// dpkg, on the CPU). "" when the machine names none.
func DefaultRootfsCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "kubelet-walkthrough", "rootfs")
}

// archive is the cache's file for a root file system of r from mirror.
func (r Recipe) archive(cache, mirror string) string {
	sum := sha256.Sum256([]byte(r.text() + mirror + "\n"))
	return filepath.Join(cache, fmt.Sprintf("%s-%x.tar", Suite, sum[:8]))
}

// MakeRootfs makes the base image's root file system in dir (Recipe.Make).
func MakeRootfs(ctx context.Context, dir, mirror, cache string, log io.Writer) error {
	return kicbaseRecipe().Make(ctx, dir, mirror, cache, log)
}

// Make makes r's root file system in dir with debootstrap, unless dir holds one made with the
// same recipe; from cache (a directory; "" keeps none) when it holds one of the same recipe and
// mirror younger than RootfsCacheAge, and into cache when it made one. mirror is the Debian
// mirror ("": the machine's own, see DebianMirror). It needs root and Debian's debootstrap.
func (r Recipe) Make(ctx context.Context, dir, mirror, cache string, log io.Writer) error {
	if r.Ready(dir) {
		return nil
	}
	if err := CheckRootfsDir(dir); err != nil {
		return fmt.Errorf("the root file system's directory %s: %w", dir, err)
	}
	if _, err := lookPath("debootstrap"); err != nil {
		return fmt.Errorf("%s's root file system is made with debootstrap (apt-get install debootstrap): %w", r.Image, err)
	}
	if !realRoot() {
		return fmt.Errorf("debootstrap needs root (the machine's: uid 0 in a user namespace is not)")
	}
	if mirror == "" {
		mirror = DebianMirror(ctx)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	// The marker goes in first, so that a debootstrap that stops leaves a directory lab rootfs
	// knows as its own.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, rootfsMaking), []byte(r.text()), 0o644); err != nil {
		return err
	}
	start := time.Now()
	archive := ""
	if cache != "" {
		archive = r.archive(cache, mirror)
	}
	if info, err := os.Stat(archive); archive != "" && err == nil && time.Since(info.ModTime()) < RootfsCacheAge && ownedByMe(info) {
		if out, err := runTool(ctx, "tar", "--extract", "--file="+archive, "--numeric-owner", "--preserve-permissions", "--xattrs", "-C", dir); err != nil {
			return fmt.Errorf("unpacking the root file system from the cache %s (remove it to make one anew): %w: %s", archive, err, lastLines(string(out), 5))
		}
		if err := r.finish(dir); err != nil {
			return err
		}
		fmt.Fprintf(log, "Root file system from the cache %s (made %s ago), in %s.\n", archive, time.Since(info.ModTime()).Round(time.Hour), time.Since(start).Round(time.Second))
		return nil
	}
	from := "debootstrap's default mirror"
	args := []string{"--variant=minbase", "--include=" + strings.Join(r.Packages, ","), Suite, dir}
	if mirror != "" {
		from, args = mirror, append(args, mirror)
	}
	fmt.Fprintf(log, "Making %s's root file system in %s (debootstrap %s from %s, a minute or two) …\n", r.Image, dir, Suite, from)
	out, err := runTool(ctx, "debootstrap", args...)
	if err != nil {
		return fmt.Errorf("debootstrap: %w\n%s", err, lastLines(string(out), 20))
	}
	for _, change := range r.Changes {
		if out, err := runTool(ctx, "chroot", dir, "/bin/sh", "-c", change); err != nil {
			return fmt.Errorf("in the root file system, %s: %w: %s", change, err, out)
		}
	}
	if err := r.finish(dir); err != nil {
		return err
	}
	fmt.Fprintf(log, "Root file system made in %s.\n", time.Since(start).Round(time.Second))
	if archive != "" {
		if err := saveRootfs(ctx, dir, archive); err != nil {
			fmt.Fprintf(log, "warning: the root file system is not kept in the cache (the next clone makes it again): %v\n", err)
		}
	}
	return nil
}

// ownedByMe says whether this user owns the file: root unpacks, as root, only an archive it
// wrote itself, not one another user put in its cache.
func ownedByMe(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// finish marks dir's root file system, made with r, done.
func (r Recipe) finish(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, rootfsDone), []byte(r.text()), 0o644); err != nil {
		return err
	}
	return os.Remove(filepath.Join(dir, rootfsMaking))
}

// saveRootfs writes dir's root file system, without its marker, to archive: into a new file
// beside it first, so that a copy half written is never read as one.
func saveRootfs(ctx context.Context, dir, archive string) error {
	if err := os.MkdirAll(filepath.Dir(archive), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(archive), ".rootfs-*.tar")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if out, err := runTool(ctx, "tar", "--create", "--file="+tmp.Name(), "--numeric-owner", "--xattrs", "--exclude=./"+rootfsDone, "-C", dir, "."); err != nil {
		return fmt.Errorf("tar: %w: %s", err, lastLines(string(out), 5))
	}
	return os.Rename(tmp.Name(), archive)
}

// DebianMirror is the Debian mirror this machine's apt uses, as apt itself reads its sources
// (one-line or deb822, options, Enabled: no): the first that serves a Debian suite. "" when there
// is none, or no apt (an Ubuntu machine, say): debootstrap then uses its own default.
func DebianMirror(ctx context.Context) string {
	out, err := runTool(ctx, "apt-get", "indextargets", "--format", "$(TARGET_OF) $(REPO_URI) $(RELEASE)")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "deb" && isDebianSuite(f[2]) {
			return strings.TrimSuffix(f[1], "/")
		}
	}
	return ""
}

// debianSuites are the Debian releases whose archive holds bookworm too.
var debianSuites = []string{"bookworm", "trixie", "forky", "sid", "stable", "testing", "unstable", "oldstable"}

func isDebianSuite(suite string) bool { return slices.Contains(debianSuites, suite) }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
