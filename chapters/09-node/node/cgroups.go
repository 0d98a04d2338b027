package node

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hierarchy is one cgroup hierarchy mounted on the host, as the node needs it: where it is
// mounted, how to mount it again inside the node, and the node's own cgroup in it.
type hierarchy struct {
	// Name is the directory under the node's /sys/fs/cgroup ("memory", "systemd", "unified"),
	// empty on a cgroup v2 host, where the hierarchy is /sys/fs/cgroup itself.
	Name string `json:"name"`
	// Options are the mount options that name it: its controllers ("cpu", "cpuset"), or
	// "none,name=systemd"; empty for cgroup2.
	Options string `json:"options"`
	V2      bool   `json:"v2"`
	// Dir is the node's cgroup on the host: <mount point><our own cgroup>/<node's name>.
	Dir string `json:"dir"`
}

// cgroupV2Magic is CGROUP2_SUPER_MAGIC, the file system type of a cgroup2 mount.
const cgroupV2Magic = 0x63677270

// CgroupV2 says whether the host runs the unified hierarchy only (most laptops) rather than
// cgroup v1 (with or without the unified hierarchy beside it): the kubelet's own test,
// statfs of /sys/fs/cgroup.
func CgroupV2() bool {
	var st syscall.Statfs_t
	return syscall.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == cgroupV2Magic
}

// hostHierarchies lists the host's cgroup hierarchies and plans the node's cgroup in each: like
// Docker's, a cgroup named name, below the cgroup this process is in (so that the node counts
// against whatever limits its starter has), except on a cgroup v2 host, where controllers can
// only be handed to a child of a cgroup without processes: there it goes below the root.
func hostHierarchies(name string) ([]hierarchy, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	v2host := CgroupV2()
	var hs []hierarchy
	for _, line := range strings.Split(string(mounts), "\n") {
		// 36 25 0:31 / /sys/fs/cgroup/memory rw,nosuid,... shared:14 - cgroup cgroup rw,memory
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		fields, super := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(super) < 3 || fields[3] != "/" {
			continue // a bind mount of a sub-cgroup, not the hierarchy itself
		}
		mountPoint := fields[4]
		switch super[0] {
		case "cgroup2":
			if !v2host && mountPoint != "/sys/fs/cgroup/unified" {
				continue
			}
			path := own[""]
			if v2host {
				path = "/"
			}
			h := hierarchy{V2: true, Dir: filepath.Join(mountPoint, path, name)}
			if !v2host {
				h.Name = "unified"
			}
			hs = append(hs, h)
		case "cgroup":
			var opts []string
			for _, o := range strings.Split(super[2], ",") {
				if o != "rw" && o != "ro" {
					opts = append(opts, o)
				}
			}
			key := strings.Join(opts, ",")
			path, ok := own[key]
			if !ok {
				continue
			}
			h := hierarchy{Name: filepath.Base(mountPoint), Options: key, Dir: filepath.Join(mountPoint, path, name)}
			if strings.HasPrefix(key, "name=") {
				h.Options = "none," + key
			}
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted under /sys/fs/cgroup")
	}
	return hs, nil
}

// ownCgroups reads /proc/self/cgroup: controllers ("" for cgroup2) → this process's cgroup.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	own := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) == 3 {
			own[parts[1]] = parts[2]
		}
	}
	return own, s.Err()
}

// createCgroups makes the node's cgroup in every hierarchy. A v1 cpuset cgroup accepts no
// process until it has CPUs and memory nodes, so they are copied from its parent; on a v2
// host the node's cgroup gets every controller its parent can give.
func createCgroups(hs []hierarchy) error {
	for _, h := range hs {
		if err := os.Mkdir(h.Dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cgroup %s: %w", h.Dir, err)
		}
		if slices.Contains(strings.Split(h.Options, ","), "cpuset") {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				data, err := os.ReadFile(filepath.Join(filepath.Dir(h.Dir), f))
				if err == nil {
					err = os.WriteFile(filepath.Join(h.Dir, f), data, 0o644)
				}
				if err != nil {
					return fmt.Errorf("cgroup %s: %s: %w", h.Dir, f, err)
				}
			}
		}
		if h.V2 && h.Name == "" {
			if err := checkControllers(h.Dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkControllers makes sure the node's cgroup has the controllers the kubelet needs: on
// cgroup v2 a cgroup has what its parent's cgroup.subtree_control hands down, and the node's
// systemd enables them further down itself.
func checkControllers(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(data))
	for _, want := range []string{"cpu", "memory", "pids"} {
		if !slices.Contains(have, want) {
			return fmt.Errorf("cgroup %s lacks the %s controller (it has %q): enable it in %s/cgroup.subtree_control",
				dir, want, have, filepath.Dir(dir))
		}
	}
	return nil
}

// joinCgroups moves the calling process, all its threads, into the node's cgroups.
func joinCgroups(hs []hierarchy) error {
	for _, h := range hs {
		if err := os.WriteFile(filepath.Join(h.Dir, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("join cgroup %s: %w", h.Dir, err)
		}
	}
	return nil
}

// cgroupProcesses lists every process left in the node's cgroups, at any depth.
func cgroupProcesses(hs []hierarchy) []int {
	seen := map[int]bool{}
	for _, h := range hs {
		_ = filepath.WalkDir(h.Dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	var pids []int
	for pid := range seen {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// removeCgroups kills what is left in the node's cgroups (by PID) and removes them, deepest
// first: systemd and the kubelet made their own cgroups below.
func removeCgroups(hs []hierarchy) error {
	for round := 0; round < 50; round++ {
		pids := cgroupProcesses(hs)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var errs []error
	for _, h := range hs {
		var dirs []string
		_ = filepath.WalkDir(h.Dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := removeCgroup(dirs[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes one cgroup directory, retrying while the kernel still counts a dying
// process in it.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}
