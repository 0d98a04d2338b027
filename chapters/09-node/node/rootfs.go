package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The node's root file system: Debian bookworm, as minikube's kicbase image is today (its
// OS-IMAGE says "Debian GNU/Linux 12 (bookworm)"), made with debootstrap from Debian's mirror,
// with the packages kicbase has that a kubeadm node uses, and kicbase's `docker` user with
// passwordless sudo, whom `minikube ssh` logs in as.

// rootfsPackages are installed on top of debootstrap's minimal base.
var rootfsPackages = []string{
	"systemd", "systemd-sysv", "dbus", // PID 1, systemctl, journalctl
	"iproute2", "iptables", "nftables", "conntrack", "ethtool", "socat", "ebtables", // kubeadm's preflight and kube-proxy
	"ca-certificates", "curl", "procps", "kmod", "util-linux", "mount", "less",
	"sudo", "openssl", "libseccomp2", // runc
}

// rootfsDone marks a complete root file system; it holds the package list it was made with.
const rootfsDone = ".kubelet-walkthrough-rootfs"

// DefaultMirror is Debian's mirror for debootstrap.
const DefaultMirror = "http://deb.debian.org/debian"

// EnsureRootfs makes the node's root file system in dir with debootstrap, unless dir holds one
// made with the same packages. It needs root and Debian's debootstrap.
func EnsureRootfs(ctx context.Context, dir, mirror string, log io.Writer) error {
	want := strings.Join(rootfsPackages, ",")
	if data, err := os.ReadFile(filepath.Join(dir, rootfsDone)); err == nil && strings.TrimSpace(string(data)) == want {
		return nil
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return fmt.Errorf("the node's root file system is made with debootstrap (Debian: apt-get install debootstrap): %w", err)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("debootstrap needs root")
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(log, "Making the node's root file system in %s (debootstrap bookworm from %s, about a minute) …\n", dir, mirror)
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+want, "bookworm", dir, mirror)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("debootstrap: %w\n%s", err, lastLines(string(out), 20))
	}
	// kicbase's user: `minikube ssh` logs in as docker, who may sudo without a password.
	chroot := func(args ...string) error {
		out, err := exec.CommandContext(ctx, "chroot", append([]string{dir}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("chroot %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := chroot("useradd", "--create-home", "--shell", "/bin/bash", "--groups", "sudo", "docker"); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/sudoers.d/docker"), []byte("docker ALL=(ALL) NOPASSWD:ALL\n"), 0o440); err != nil {
		return err
	}
	// What debootstrap leaves that a node does not need: downloaded packages, package lists,
	// documentation; and the machine ID, which systemd makes anew at each boot when empty.
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*", "usr/share/doc/*", "usr/share/man/*", "usr/share/locale/*"} {
		matches, _ := filepath.Glob(filepath.Join(dir, glob))
		for _, m := range matches {
			_ = os.RemoveAll(m)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/machine-id"), nil, 0o444); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, rootfsDone), []byte(want+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "Root file system made in %s.\n", time.Since(start).Round(time.Second))
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
