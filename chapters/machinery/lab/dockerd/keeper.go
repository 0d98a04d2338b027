package dockerd

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// keeperGrace is how long the keeper gives dockerd to stop its containers (each gets Docker's
// ten seconds after its stop signal) before it kills what is left.
const keeperGrace = 45 * time.Second

// A program that imports this package becomes an engine's keeper when Start runs it again as
// one: before its main, or its tests, start.
func init() { runIfKeeper() }

// runIfKeeper makes this process an engine's keeper, and exits, when Start ran it as one; it
// returns at once otherwise.
func runIfKeeper() {
	if len(os.Args) != 5 || os.Args[1] != keeperArg {
		return
	}
	if err := keep(os.Args[2], os.Args[3], os.Args[4]); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-walkthrough docker keeper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// keep runs as PID 1 of the engine's namespaces: it prepares them, runs dockerd until it is
// told to stop, then leaves nothing behind (but remove, when it is "").
func keep(dir, parent, remove string) (err error) {
	if remove != "" {
		defer func() { err = errors.Join(err, removeDir(remove)) }()
	}
	// Mounts made here stay here: a private /run (where dockerd and its containerd would find
	// this machine's containerd socket, and put their own), and a /proc of this PID namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount /run: %w", err)
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %w: %s", err, out)
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	children := make(chan os.Signal, 16)
	signal.Notify(children, syscall.SIGCHLD)

	// containerd first, the engine's own: dockerd would start one itself, whose plugins write to
	// this machine's /opt/containerd. Without its CRI plugin, as Docker's own containerd.io
	// package configures it: Docker does not use it, and at its start it makes /etc/cni/net.d on
	// this machine (the engine shares the machine's /etc).
	containerdConfig := filepath.Join(dir, "containerd.toml")
	config := EngineContainerdConfig(filepath.Join(dir, "containerd"), filepath.Join(dir, "containerd-opt"))
	if err := os.WriteFile(containerdConfig, []byte(config), 0o644); err != nil {
		return err
	}
	containerd := exec.Command("containerd", "--config", containerdConfig)
	containerd.Stdout, containerd.Stderr = os.Stdout, os.Stderr
	if err := containerd.Start(); err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	for i := 0; i < 100; i++ {
		if _, err := os.Stat("/run/containerd/containerd.sock"); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Its containers weigh as this keeper's nice (weight.go): made before dockerd makes the parent.
	nice, err := ownNice()
	if err == nil {
		var points []string
		if points, err = CgroupMounts(); err == nil {
			err = weighCgroupParent(points, parent, nice)
		}
	}
	if err != nil {
		fmt.Printf("keeper: %v: its containers compete for the CPU at the default weight\n", err)
	}

	dockerd := exec.Command("dockerd",
		"--containerd", "/run/containerd/containerd.sock",
		"--config-file", filepath.Join(dir, configFile),
		"--data-root", filepath.Join(dir, "data"),
		// The exec root holds containerd's socket, deep enough to overflow a socket path under a
		// long run directory; the private /run is short and goes with the namespace.
		"--exec-root", "/run/docker",
		"--pidfile", filepath.Join(dir, "docker.pid"),
		"--cgroup-parent", parent)
	dockerd.Stdout, dockerd.Stderr = os.Stdout, os.Stderr
	if err := dockerd.Start(); err != nil {
		return errors.Join(err, removeCgroups(parent, 10*time.Second))
	}
	pid := dockerd.Process.Pid
	fmt.Printf("keeper: dockerd started (PID %d in the engine's namespace)\n", pid)

	// As PID 1, the keeper reaps every process that ends here; dockerd's end is the one it
	// waits for.
	var dockerdStatus *unix.WaitStatus
	reap := func() {
		for {
			var ws unix.WaitStatus
			p, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if p <= 0 || err != nil {
				return
			}
			if p == pid {
				dockerdStatus = &ws
			}
		}
	}
	var stopErr error
	stopping := false
	var deadline <-chan time.Time
	for dockerdStatus == nil {
		select {
		case s := <-signals:
			if !stopping {
				fmt.Printf("keeper: %v: stopping dockerd\n", s)
				stopping = true
				_ = syscall.Kill(pid, syscall.SIGTERM)
				deadline = time.After(keeperGrace)
			}
		case <-deadline:
			stopErr = fmt.Errorf("dockerd did not stop in %s: killed", keeperGrace)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = nil
		case <-children:
			reap()
		}
	}
	if !stopping {
		stopErr = fmt.Errorf("dockerd exited by itself: %s", describe(*dockerdStatus))
	}
	fmt.Printf("keeper: dockerd exited (%s)\n", describe(*dockerdStatus))
	_ = containerd.Process.Signal(syscall.SIGTERM)
	for i := 0; i < 100 && syscall.Kill(containerd.Process.Pid, 0) == nil; i++ {
		reapAll()
		time.Sleep(100 * time.Millisecond)
	}

	// Whatever dockerd left running (container shims, a node whose stop signal it ignored)
	// ends with this namespace; end it now, so that its cgroups can go.
	if left := killAll(); left > 0 {
		fmt.Printf("keeper: ended %d processes dockerd left\n", left)
	}
	if err := removeCgroups(parent, 10*time.Second); err != nil {
		return errors.Join(stopErr, err)
	}
	return stopErr
}

// reapAll reaps every child that has ended.
func reapAll() {
	for {
		p, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if p <= 0 || err != nil {
			return
		}
	}
}

func describe(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return "exit code " + strconv.Itoa(ws.ExitStatus())
}

// killAll kills every process of this PID namespace but the keeper, reaps them, and returns how
// many there were.
func killAll() int {
	killed := map[int]bool{}
	for range 50 {
		pids := otherProcesses()
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if syscall.Kill(p, syscall.SIGKILL) == nil {
				killed[p] = true
			}
		}
		time.Sleep(100 * time.Millisecond)
		for {
			p, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if p <= 0 || err != nil {
				break
			}
		}
	}
	return len(killed)
}

// otherProcesses lists this PID namespace's processes (its /proc) but the keeper.
func otherProcesses() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil && p != 1 {
			pids = append(pids, p)
		}
	}
	return pids
}

// CgroupMounts lists the mount points of every cgroup hierarchy (v1 and v2) of this machine.
func CgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID parent major:minor root mountpoint options [optional…] - fstype source superoptions
		fields := strings.Fields(s.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fstype := fields[sep+1]; (fstype == "cgroup" || fstype == "cgroup2") && fields[3] == "/" {
			if !slices.Contains(points, fields[4]) {
				points = append(points, fields[4])
			}
		}
	}
	return points, s.Err()
}

// removeCgroups removes the cgroup parent from every hierarchy, its children first.
func removeCgroups(parent string, timeout time.Duration) error {
	points, err := CgroupMounts()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		left := CgroupsLeft(points, parent)
		if len(left) == 0 {
			return nil
		}
		for _, dir := range left {
			removeTree(dir)
		}
		if len(CgroupsLeft(points, parent)) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups left: %s", strings.Join(CgroupsLeft(points, parent), ", "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// CgroupsLeft lists the hierarchies under whose mount points the cgroup parent still exists.
func CgroupsLeft(points []string, parent string) []string {
	var left []string
	for _, p := range points {
		dir := filepath.Join(p, parent)
		if _, err := os.Stat(dir); err == nil {
			left = append(left, dir)
		}
	}
	return left
}

// removeTree removes a cgroup directory and its children, deepest first (rmdir: a cgroup's
// files go with it).
func removeTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = unix.Rmdir(dir)
}

// removeDir removes a directory the engine used: first whatever is still mounted under it in
// the keeper's mount namespace (a container's root file system, when dockerd could not stop
// it), deepest first, then the files.
func removeDir(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var under []string
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			under = append(under, fields[4])
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	for _, m := range under {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	return os.RemoveAll(dir)
}

// EngineContainerdConfig is the configuration of an engine's containerd whose root and opt
// directories are those given: its state and socket in the engine's private /run, and no CRI
// plugin.
func EngineContainerdConfig(root, opt string) string {
	return fmt.Sprintf("version = 2\nroot = %q\nstate = \"/run/containerd\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n"+
		"[grpc]\n  address = \"/run/containerd/containerd.sock\"\n"+
		"[plugins.\"io.containerd.internal.v1.opt\"]\n  path = %q\n", root, opt)
}
