package runcshim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Machine is what this process may give a container.
type Machine struct {
	bounding  uint64 // CapBnd of /proc/self/status
	effective uint64 // CapEff
	oomAdj    int    // /proc/self/oom_score_adj
}

// ReadMachine reads what this process may give a container.
func ReadMachine() (Machine, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Machine{}, err
	}
	var m Machine
	for _, line := range strings.Split(string(status), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var target *uint64
		switch key {
		case "CapBnd":
			target = &m.bounding
		case "CapEff":
			target = &m.effective
		default:
			continue
		}
		if *target, err = strconv.ParseUint(strings.TrimSpace(value), 16, 64); err != nil {
			return Machine{}, fmt.Errorf("/proc/self/status %s: %w", key, err)
		}
	}
	adj, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return Machine{}, err
	}
	if m.oomAdj, err = strconv.Atoi(strings.TrimSpace(string(adj))); err != nil {
		return Machine{}, fmt.Errorf("/proc/self/oom_score_adj: %w", err)
	}
	return m, nil
}

// capabilities are the names runc knows, by number (linux/capability.h).
var capabilities = map[string]int{
	"CAP_CHOWN": unix.CAP_CHOWN, "CAP_DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "CAP_DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"CAP_FOWNER": unix.CAP_FOWNER, "CAP_FSETID": unix.CAP_FSETID, "CAP_KILL": unix.CAP_KILL, "CAP_SETGID": unix.CAP_SETGID,
	"CAP_SETUID": unix.CAP_SETUID, "CAP_SETPCAP": unix.CAP_SETPCAP, "CAP_LINUX_IMMUTABLE": unix.CAP_LINUX_IMMUTABLE,
	"CAP_NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "CAP_NET_BROADCAST": unix.CAP_NET_BROADCAST, "CAP_NET_ADMIN": unix.CAP_NET_ADMIN,
	"CAP_NET_RAW": unix.CAP_NET_RAW, "CAP_IPC_LOCK": unix.CAP_IPC_LOCK, "CAP_IPC_OWNER": unix.CAP_IPC_OWNER,
	"CAP_SYS_MODULE": unix.CAP_SYS_MODULE, "CAP_SYS_RAWIO": unix.CAP_SYS_RAWIO, "CAP_SYS_CHROOT": unix.CAP_SYS_CHROOT,
	"CAP_SYS_PTRACE": unix.CAP_SYS_PTRACE, "CAP_SYS_PACCT": unix.CAP_SYS_PACCT, "CAP_SYS_ADMIN": unix.CAP_SYS_ADMIN,
	"CAP_SYS_BOOT": unix.CAP_SYS_BOOT, "CAP_SYS_NICE": unix.CAP_SYS_NICE, "CAP_SYS_RESOURCE": unix.CAP_SYS_RESOURCE,
	"CAP_SYS_TIME": unix.CAP_SYS_TIME, "CAP_SYS_TTY_CONFIG": unix.CAP_SYS_TTY_CONFIG, "CAP_MKNOD": unix.CAP_MKNOD,
	"CAP_LEASE": unix.CAP_LEASE, "CAP_AUDIT_WRITE": unix.CAP_AUDIT_WRITE, "CAP_AUDIT_CONTROL": unix.CAP_AUDIT_CONTROL,
	"CAP_SETFCAP": unix.CAP_SETFCAP, "CAP_MAC_OVERRIDE": unix.CAP_MAC_OVERRIDE, "CAP_MAC_ADMIN": unix.CAP_MAC_ADMIN,
	"CAP_SYSLOG": unix.CAP_SYSLOG, "CAP_WAKE_ALARM": unix.CAP_WAKE_ALARM, "CAP_BLOCK_SUSPEND": unix.CAP_BLOCK_SUSPEND,
	"CAP_AUDIT_READ": unix.CAP_AUDIT_READ, "CAP_PERFMON": unix.CAP_PERFMON, "CAP_BPF": unix.CAP_BPF,
	"CAP_CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
}

// allows says whether a capability, by name, is in the bounding set. A name this table does
// not know is left to runc.
func (m Machine) allows(name string) bool {
	n, ok := capabilities[name]
	return !ok || m.bounding&(1<<n) != 0
}

// missing lists the known capabilities the bounding set lacks.
func (m Machine) missing() []string {
	var names []string
	for name := range capabilities {
		if !m.allows(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// mayLowerOOMAdj says whether this process may set an oom_score_adj below its own.
func (m Machine) mayLowerOOMAdj() bool {
	return m.effective&(1<<unix.CAP_SYS_RESOURCE) != 0
}

// Needed says whether the shim changes anything on this machine.
func (m Machine) Needed() bool { return len(m.missing()) > 0 || !m.mayLowerOOMAdj() }

// Explain says what the shim changes on this machine.
func (m Machine) Explain() string {
	if !m.Needed() {
		return "nothing to change: the bounding set has every capability and CAP_SYS_RESOURCE is effective"
	}
	var parts []string
	if missing := m.missing(); len(missing) > 0 {
		parts = append(parts, "removes "+strings.Join(missing, ", ")+" (not in this machine's bounding set)")
	}
	if !m.mayLowerOOMAdj() {
		parts = append(parts, fmt.Sprintf("raises an oom_score_adj below %d to %d (CAP_SYS_RESOURCE is not effective)", m.oomAdj, m.oomAdj))
	}
	return strings.Join(parts, "; ")
}

// adjust changes one process object of a spec (config.json's "process", or an exec's process
// file) to what the machine allows, and says whether it changed it.
func (m Machine) adjust(process map[string]any) bool {
	changed := false
	if caps, ok := process["capabilities"].(map[string]any); ok {
		for set, list := range caps {
			names, ok := list.([]any)
			if !ok {
				continue
			}
			kept := names[:0:0]
			for _, n := range names {
				if s, ok := n.(string); !ok || m.allows(s) {
					kept = append(kept, n)
				}
			}
			if len(kept) != len(names) {
				caps[set] = kept
				changed = true
			}
		}
	}
	if adj, ok := process["oomScoreAdj"].(float64); ok && int(adj) < m.oomAdj && !m.mayLowerOOMAdj() {
		process["oomScoreAdj"] = m.oomAdj
		changed = true
	}
	return changed
}

// rewrite applies adjust to a JSON file; process names the object inside it ("" for the
// file's top level).
func (m Machine) rewrite(path, process string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	target := doc
	if process != "" {
		if target, _ = doc[process].(map[string]any); target == nil {
			return nil
		}
	}
	if !m.adjust(target) {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, info.Mode().Perm())
}

// globalValueFlags are runc's global flags that take a value as the next argument.
var globalValueFlags = []string{"--root", "--log", "--log-format", "--criu", "--rootless"}

// invocation is what the shim needs of runc's arguments.
type invocation struct {
	command string // create, run, exec, …
	bundle  string // create and run: the bundle directory (runc's default: the working directory)
	process string // exec: the --process file, if any
}

// parse reads runc's arguments (without argv[0]).
func parse(args []string) invocation {
	var inv invocation
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			inv.command = a
			break
		}
		if slices.Contains(globalValueFlags, a) {
			i++
		}
	}
	value := func(long, short string) (string, bool) {
		for j := i + 1; j < len(args); j++ {
			a := args[j]
			switch {
			case a == "--":
				return "", false
			case (a == long || a == short) && j+1 < len(args):
				return args[j+1], true
			case strings.HasPrefix(a, long+"="):
				return strings.TrimPrefix(a, long+"="), true
			case short != "" && strings.HasPrefix(a, short+"="):
				return strings.TrimPrefix(a, short+"="), true
			}
		}
		return "", false
	}
	switch inv.command {
	case "create", "run":
		inv.bundle = "."
		if b, ok := value("--bundle", "-b"); ok {
			inv.bundle = b
		}
	case "exec":
		inv.process, _ = value("--process", "-p")
	}
	return inv
}

// realRunc is the runc the shim execs: runc.real beside the shim (the base image), else the
// first runc on PATH that is not the shim itself (Docker's runtime).
func realRunc(self string) (string, error) {
	if real := self + ".real"; isExecutable(real) {
		return real, nil
	}
	selfInfo, _ := os.Stat(self)
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		candidate := filepath.Join(dir, "runc")
		info, err := os.Stat(candidate)
		if err != nil || !isExecutable(candidate) || (selfInfo != nil && os.SameFile(info, selfInfo)) {
			continue
		}
		return candidate, nil
	}
	return "", errors.New("no runc to run: neither runc.real beside the shim nor runc on PATH")
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

func run(argv []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	runc, err := realRunc(self)
	if err != nil {
		return err
	}
	m, err := ReadMachine()
	if err != nil {
		return err
	}
	if m.Needed() {
		inv := parse(argv[1:])
		switch {
		case inv.bundle != "":
			err = m.rewrite(filepath.Join(inv.bundle, "config.json"), "process")
		case inv.process != "":
			err = m.rewrite(inv.process, "")
		}
		if err != nil {
			return err
		}
	}
	return syscall.Exec(runc, append([]string{runc}, argv[1:]...), os.Environ())
}
