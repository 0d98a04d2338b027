package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// The node's first process. It runs as PID 1 of new mount, PID, UTS, IPC and network
// namespaces (the launcher made them when it started it), and turns itself into what Docker
// makes of minikube's kicbase container: it joins the node's cgroups and makes a cgroup
// namespace there, mounts the root file system and what a container sees (/proc, /sys, cgroups,
// /dev, /run, /tmp), switches to that root and executes systemd.

// runInit never returns unless it failed.
func runInit(dir string) error {
	cfg, err := readLaunch(dir)
	if err != nil {
		return err
	}
	// Namespaces belong to threads: the cgroup namespace made here, the mounts made in it and
	// the capability bounding set must all be this thread's when it executes systemd.
	runtime.LockOSThread()
	if err := joinCgroups(cfg.Cgroups); err != nil {
		return err
	}
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("new cgroup namespace: %w", err)
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	root := filepath.Join(dir, "merged")
	if err := mountRoot(cfg, root); err != nil {
		return fmt.Errorf("the node's file systems: %w", err)
	}
	if err := pivot(root); err != nil {
		return fmt.Errorf("switch to the node's root: %w", err)
	}
	// A node may not load kernel modules into, or set the clock of, the machine it runs on.
	for _, c := range []uintptr{unix.CAP_SYS_MODULE, unix.CAP_SYS_TIME} {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	env := []string{
		"container=docker", // what kicbase runs with: systemd then knows it is in a container
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"TERM=dumb",
	}
	if err := unix.Exec("/sbin/init", []string{"/sbin/init"}, env); err != nil {
		return fmt.Errorf("execute /sbin/init: %w", err)
	}
	return nil
}

// mount is unix.Mount with the error saying what failed.
func mount(source, target, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s on %s (%s): %w", source, target, fstype, err)
	}
	return nil
}

// bindReadOnly bind-mounts source on target, read-only.
func bindReadOnly(source, target string) error {
	if err := mount(source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_REC, "")
}

// mountRoot assembles the node's root file system at root, in this (private) mount namespace.
func mountRoot(cfg *launch, root string) error {
	if err := mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	// The pristine root file system, shared by every run, with this run's changes on top.
	upper, work := filepath.Join(cfg.Dir, "upper"), filepath.Join(cfg.Dir, "work")
	for _, d := range []string{root, upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := mount("overlay", root, "overlay", 0,
		fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", cfg.Rootfs, upper, work)); err != nil {
		return err
	}
	// containerd's overlayfs snapshotter cannot put its layers on an overlay: its data lives
	// in a plain directory, as minikube's /var is a Docker volume.
	for _, b := range []struct{ from, to string }{
		{filepath.Join(cfg.Dir, "containerd"), "/var/lib/containerd"},
	} {
		target := filepath.Join(root, b.to)
		if err := os.MkdirAll(b.from, 0o711); err != nil {
			return err
		}
		if err := os.MkdirAll(target, 0o711); err != nil {
			return err
		}
		if err := mount(b.from, target, "", unix.MS_BIND, ""); err != nil {
			return err
		}
	}
	// The components built for the node, read-only.
	components := filepath.Join(root, componentsInNode)
	if err := os.MkdirAll(components, 0o755); err != nil {
		return err
	}
	if err := bindReadOnly(cfg.Components, components); err != nil {
		return err
	}
	if err := mountProc(cfg, root); err != nil {
		return err
	}
	if err := mount("sysfs", filepath.Join(root, "sys"), "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if err := mountCgroups(cfg, filepath.Join(root, "sys/fs/cgroup")); err != nil {
		return err
	}
	if err := mountDev(filepath.Join(root, "dev")); err != nil {
		return err
	}
	for _, t := range []struct{ dir, mode string }{{"run", "755"}, {"tmp", "1777"}} {
		if err := mount("tmpfs", filepath.Join(root, t.dir), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode="+t.mode); err != nil {
			return err
		}
	}
	// kicbase mounts the host's /lib/modules read-only, for kube-proxy's and the CNI's checks.
	if info, err := os.Stat("/lib/modules"); err == nil && info.IsDir() {
		target := filepath.Join(root, "lib/modules")
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := bindReadOnly("/lib/modules", target); err != nil {
			return err
		}
	}
	return nil
}

// kernelTunables are the sysctls the kubelet sets when they differ (setupKernelTunables: it
// stops when it cannot). They are machine-wide, not per namespace: the node sees files
// holding the values the kubelet wants, and the machine keeps its own.
var kernelTunables = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// mountProc gives the node a /proc of its PID namespace, with /proc/sys read-only but for
// /proc/sys/net, which belongs to the node's network namespace.
func mountProc(cfg *launch, root string) error {
	proc := filepath.Join(root, "proc")
	if err := mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	sys := filepath.Join(proc, "sys")
	if err := mount(sys, sys, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	// A second proc mount, only to take its (per network namespace) sys/net from.
	scratch := filepath.Join(cfg.Dir, "procnet")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return err
	}
	if err := mount("proc", scratch, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if err := mount("", sys, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return err
	}
	if err := mount(filepath.Join(scratch, "sys/net"), filepath.Join(sys, "net"), "", unix.MS_BIND, ""); err != nil {
		return err
	}
	if err := unix.Unmount(scratch, unix.MNT_DETACH); err != nil {
		return err
	}
	tunables := filepath.Join(cfg.Dir, "sysctl")
	if err := os.MkdirAll(tunables, 0o755); err != nil {
		return err
	}
	for key, value := range kernelTunables {
		file := filepath.Join(tunables, strings.ReplaceAll(key, "/", "."))
		if err := os.WriteFile(file, []byte(value+"\n"), 0o644); err != nil {
			return err
		}
		if err := mount(file, filepath.Join(sys, key), "", unix.MS_BIND, ""); err != nil {
			return err
		}
	}
	// Per network namespace, so the node's own: what Docker's bridge network and kicbase set up
	// for a node that forwards its pods' traffic (kubeadm's preflight checks ip_forward).
	for key, value := range map[string]string{"net/ipv4/ip_forward": "1", "net/bridge/bridge-nf-call-iptables": "1", "net/bridge/bridge-nf-call-ip6tables": "1"} {
		if err := os.WriteFile(filepath.Join(sys, key), []byte(value), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sysctl %s: %w", key, err)
		}
	}
	for _, ro := range []string{"sysrq-trigger"} {
		path := filepath.Join(proc, ro)
		if _, err := os.Stat(path); err == nil {
			if err := bindReadOnly(path, path); err != nil {
				return err
			}
		}
	}
	return nil
}

// mountCgroups gives the node the host's cgroup hierarchies, each rooted at the node's own
// cgroup by the cgroup namespace: on a cgroup v1 host a tmpfs with every v1 hierarchy mounted
// by its exact controllers (systemd then runs in hybrid mode), on a v2 host the unified one.
func mountCgroups(cfg *launch, target string) error {
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if len(cfg.Cgroups) == 1 && cfg.Cgroups[0].V2 && cfg.Cgroups[0].Name == "" {
		return mount("cgroup2", target, "cgroup2", flags, "")
	}
	if err := mount("cgroup", target, "tmpfs", flags, "mode=755"); err != nil {
		return err
	}
	for _, h := range cfg.Cgroups {
		dir := filepath.Join(target, h.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if h.V2 {
			if err := mount("cgroup2", dir, "cgroup2", flags, ""); err != nil {
				return err
			}
			continue
		}
		if err := mount("cgroup", dir, "cgroup", flags, h.Options); err != nil {
			return err
		}
	}
	// cpu and cpuacct are often one hierarchy ("cpu,cpuacct"): systemd and runc look for both
	// names.
	for _, h := range cfg.Cgroups {
		if strings.Contains(h.Name, ",") {
			for _, alias := range strings.Split(h.Name, ",") {
				_ = os.Symlink(h.Name, filepath.Join(target, alias))
			}
		}
	}
	return nil
}

// mountDev gives the node a small /dev of its own, as a container runtime does; /dev/kmsg is
// the machine's kernel log, which a privileged container (kicbase) reads too: the kubelet's
// OOM watcher needs it.
func mountDev(dev string) error {
	if err := mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=755,size=65536k"); err != nil {
		return err
	}
	for _, n := range []struct {
		name         string
		major, minor uint32
		mode         uint32
	}{
		{"null", 1, 3, 0o666}, {"zero", 1, 5, 0o666}, {"full", 1, 7, 0o666}, {"random", 1, 8, 0o666},
		{"urandom", 1, 9, 0o666}, {"tty", 5, 0, 0o666}, {"kmsg", 1, 11, 0o644}, {"fuse", 10, 229, 0o666},
	} {
		if err := unix.Mknod(filepath.Join(dev, n.name), unix.S_IFCHR|n.mode, int(unix.Mkdev(n.major, n.minor))); err != nil {
			return fmt.Errorf("mknod /dev/%s: %w", n.name, err)
		}
		if err := os.Chmod(filepath.Join(dev, n.name), os.FileMode(n.mode)); err != nil {
			return err
		}
	}
	for _, d := range []string{"pts", "shm", "mqueue"} {
		if err := os.MkdirAll(filepath.Join(dev, d), 0o755); err != nil {
			return err
		}
	}
	if err := mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,gid=5,mode=620,ptmxmode=666"); err != nil {
		return err
	}
	if err := mount("shm", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=65536k"); err != nil {
		return err
	}
	if err := mount("mqueue", filepath.Join(dev, "mqueue"), "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	for link, to := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "core": "/proc/kcore",
	} {
		if err := os.Symlink(to, filepath.Join(dev, link)); err != nil {
			return fmt.Errorf("/dev/%s: %w", link, err)
		}
	}
	return nil
}

// pivot makes root the root of this mount namespace and lets go of the machine's file system.
func pivot(root string) error {
	old := filepath.Join(root, ".oldroot")
	if err := os.MkdirAll(old, 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(root, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("let go of the machine's root: %w", err)
	}
	if err := os.Remove("/.oldroot"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
