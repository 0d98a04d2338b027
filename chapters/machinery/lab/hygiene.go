package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/dockerd"
)

// What a lab could leave on this machine, in two parts: what belongs to one lab (its
// processes, mounts, network namespace, cgroups and run directory: Lab.Left), and this machine's
// own state that no lab may change (Trace, compared before and after with Leftovers). Other labs
// may run meanwhile (test packages run in parallel), so nothing here counts what they make.

// Trace is this machine's own state that a lab must leave as it found it.
type Trace struct {
	// Cgroups are the top-level cgroups of every hierarchy, but the engines' own parents: a node
	// whose kubelet escaped its container would make kubepods or system.slice here.
	Cgroups []string
	// Netfilter is this network namespace's rule set, as iptables-save and nft print it.
	Netfilter []string
	// Files are the places a Docker engine or minikube writes to by default, where they exist.
	Files []string
}

// defaultPlaces are where a Docker engine, containerd, a kubelet or minikube would write if
// nothing pointed them elsewhere — all of /etc among them (/etc/docker, /etc/cni/net.d,
// /etc/kubernetes, a kubelet's systemd drop-in) — and the user's home adds .minikube, .kube and
// .docker.
var defaultPlaces = []string{"/etc", "/var/lib/docker", "/var/lib/containerd", "/var/lib/kubelet", "/opt/containerd", "/opt/cni",
	"/run/docker", "/run/containerd", "/run/docker.sock", "/var/run/docker.pid", "/run/netns"}

// counters are the parts of a netfilter rule that change by themselves while packets pass:
// nft's "counter packets N bytes M" and iptables-save -c's "[N:M]".
var counters = regexp.MustCompile(`counter packets [0-9]+ bytes [0-9]+|^\[[0-9]+:[0-9]+\] `)

// NetfilterRule is line as a Trace keeps it: its counters left out, so that a rule whose
// packets moved (Docker Engine's own while containers talk, say) is still the same rule. It
// returns false for lines that are not rules: comments (they carry the time), and
// iptables-save's chain headers (their policy counters move too).
func NetfilterRule(line string) (string, bool) {
	if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ":") {
		return "", false
	}
	return counters.ReplaceAllStringFunc(line, func(c string) string {
		if strings.HasPrefix(c, "counter") {
			return "counter"
		}
		return ""
	}), true
}

// TakeTrace reads this machine's Trace.
func TakeTrace() Trace {
	var t Trace
	points, _ := dockerd.CgroupMounts()
	for _, p := range points {
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), dockerd.CgroupPrefix) {
				t.Cgroups = append(t.Cgroups, filepath.Join(p, e.Name()))
			}
		}
	}
	for _, c := range [][]string{{"iptables-save"}, {"ip6tables-save"}, {"iptables-legacy-save"}, {"nft", "list", "ruleset"}} {
		if out, err := exec.Command(c[0], c[1:]...).Output(); err == nil {
			for _, line := range strings.Split(string(out), "\n") {
				if rule, ok := NetfilterRule(line); ok {
					t.Netfilter = append(t.Netfilter, c[0]+": "+rule)
				}
			}
		}
	}
	places := append([]string(nil), defaultPlaces...)
	if home, err := os.UserHomeDir(); err == nil {
		places = append(places, filepath.Join(home, ".minikube"), filepath.Join(home, ".kube"), filepath.Join(home, ".docker"))
	}
	for _, place := range places {
		_ = filepath.WalkDir(place, func(path string, d os.DirEntry, err error) error {
			if err == nil {
				t.Files = append(t.Files, path)
			}
			return nil
		})
	}
	slices.Sort(t.Cgroups)
	slices.Sort(t.Netfilter)
	slices.Sort(t.Files)
	return t
}

// Leftovers lists what after has that before had not, one line each.
func Leftovers(before, after Trace) []string {
	var left []string
	added := func(kind string, b, a []string) {
		for _, x := range a {
			if _, found := slices.BinarySearch(b, x); !found {
				left = append(left, fmt.Sprintf("%s: %s", kind, x))
			}
		}
	}
	added("cgroup", before.Cgroups, after.Cgroups)
	added("netfilter rule", before.Netfilter, after.Netfilter)
	added("file", before.Files, after.Files)
	return left
}

// Left lists what this lab left after Stop (see LeftBehind).
func (l *Lab) Left() []string {
	var st dockerd.State
	if l.Engine != nil {
		st = dockerd.State{KeeperPID: l.Engine.PID(), CgroupParent: l.Engine.CgroupParent, NetNS: l.netNS}
	}
	return LeftBehind(l.Dir, st, l.temp)
}

// LeftBehind lists what the lab of run directory dir, whose engine was st, left: a process
// that names the directory or is in the engine's network namespace, a mount under the
// directory, a cgroup of the engine, and the directory itself when gone is true.
func LeftBehind(dir string, st dockerd.State, gone bool) []string {
	var left []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := fmt.Sscan(p.Name(), new(int)); err != nil || p.Name() == fmt.Sprint(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		ns, _ := os.Readlink("/proc/" + p.Name() + "/ns/net")
		if strings.Contains(string(cmdline), dir) || (st.NetNS != "" && ns == st.NetNS) {
			left = append(left, fmt.Sprintf("process %s: %s", p.Name(), strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
				left = append(left, "mount "+f[4])
			}
		}
	}
	if st.CgroupParent != "" {
		points, _ := dockerd.CgroupMounts()
		for _, c := range dockerd.CgroupsLeft(points, st.CgroupParent) {
			left = append(left, "cgroup "+c)
		}
	}
	if gone {
		if _, err := os.Stat(dir); err == nil {
			left = append(left, "run directory "+dir)
		}
	}
	return left
}
