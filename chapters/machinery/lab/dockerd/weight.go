package dockerd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// An engine started under nice keeps its nice. Its containers run in cgroups of their own, under
// the engine's cgroup parent, and the kernel weighs a cgroup against what runs beside it by the
// cgroup's CPU weight, not by the nice of the processes inside: a minikube node started by a
// `nice -n 19` process would compete for the CPU as if nice were 0. So the keeper gives the cgroup
// parent the weight the kernel gives one process of its nice value (make test runs the stages it
// starts beside the workshop's rehearsal under nice: the rehearsal's timings are checked).

// niceWeights is the kernel's table of a process's CPU weight by its nice value, 0 to 19
// (sched_prio_to_weight, kernel/sched/core.c); nice 0 weighs 1024, each step about 1.25 times less.
var niceWeights = [...]int{1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15}

// cgroupWeight is the CPU weight a cgroup parent gets for nice: cpu.shares in cgroup v1 (the
// kernel's weight itself), cpu.weight in cgroup v2 (100 for the kernel's 1024, at least 1). ok
// is false for a nice of 0 or less: the parent keeps the default weight (an engine is never
// given more than its default).
func cgroupWeight(nice int, v2 bool) (weight int, ok bool) {
	if nice <= 0 {
		return 0, false
	}
	w := niceWeights[min(nice, len(niceWeights)-1)]
	if v2 {
		return max(1, w*100/1024), true
	}
	return w, true
}

// ownNice is this process's nice value (the getpriority system call answers 20 - nice).
func ownNice() (int, error) {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		return 0, fmt.Errorf("getpriority: %w", err)
	}
	return 20 - p, nil
}

// cpuHierarchy finds among the mount points (CgroupMounts) the hierarchy of the cpu controller,
// and the file that weighs a cgroup in it: cpu.shares in cgroup v1, cpu.weight in v2 (where the
// root's subtree_control names cpu). ok is false when no hierarchy has it.
func cpuHierarchy(points []string) (point, file string, ok bool) {
	for _, p := range points {
		if _, err := os.Stat(filepath.Join(p, "cpu.shares")); err == nil {
			return p, "cpu.shares", true
		}
		controllers, err := os.ReadFile(filepath.Join(p, "cgroup.subtree_control"))
		if err == nil && slices.Contains(strings.Fields(string(controllers)), "cpu") {
			return p, "cpu.weight", true
		}
	}
	return "", "", false
}

// weighCgroupParent makes the cgroup parent in the cpu controller's hierarchy with the weight of
// nice; with a nice of 0 or less, or no such hierarchy, it does nothing, and dockerd makes the
// parent with the default weight.
func weighCgroupParent(points []string, parent string, nice int) error {
	point, file, ok := cpuHierarchy(points)
	if !ok {
		return nil
	}
	weight, ok := cgroupWeight(nice, file == "cpu.weight")
	if !ok {
		return nil
	}
	dir := filepath.Join(point, parent)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make the cgroup parent %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(weight)), 0o644); err != nil {
		return fmt.Errorf("weigh the cgroup parent %s as nice %d: %w", dir, nice, err)
	}
	return nil
}
