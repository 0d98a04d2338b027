package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Attendee makes the lab's commands run as a workshop attendee runs them: a normal user (not
// root), in the group that owns the Docker engine's socket, like a Linux user in the `docker`
// group. Nothing of it is on this machine: the user and its groups are lines in copies of
// /etc/passwd and /etc/group mounted over the originals, and the directories it writes as their
// owner would are idmapped mounts — all in a mount namespace of the lab's own (the "laptop"),
// which goes when the lab stops.
type Attendee struct {
	// Owns are directories the attendee's commands write as their owner (root) would: the
	// repository's checkout. Go's build and module caches are added to them, so that the
	// attendee's builds are links into the same cache, not a compile of their own.
	Owns []string
}

// AttendeeName is the attendee's user name in the lab.
const AttendeeName = "attendee"

// identity is who the attendee is: a uid and gid of its own, and the socket's group.
type identity struct {
	UID, GID int
	// Docker is the gid of the engine's socket: this machine's docker group when it has one
	// (as the docker.io package makes it), else a gid of the lab's own.
	Docker int
}

// AttendeeRequirements says what this machine lacks to run commands as the attendee (nil:
// nothing): root, to make its mounts, and util-linux's nsenter and setpriv.
func AttendeeRequirements() error {
	var missing []error
	if os.Geteuid() != 0 {
		missing = append(missing, errors.New("root (the attendee's mounts are made in a mount namespace of the lab's)"))
	}
	for _, p := range []string{"nsenter", "setpriv", "env"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, fmt.Errorf("%s on PATH (Debian packages util-linux, coreutils)", p))
		}
	}
	if len(missing) == 0 {
		missing = append(missing, probeIDMappedMounts())
	}
	return errors.Join(missing...)
}

// probeIDMappedMounts makes the attendee's laptop once, for a directory of its own in TMPDIR,
// and ends it: idmapped mounts need Linux 5.12 or later, the machine's root (not root in a user
// namespace, as in a rootless container) and a filesystem that has them (tmpfs from Linux 6.3).
func probeIDMappedMounts() error {
	dir, err := os.MkdirTemp("", "kubelet-walkthrough-idmap")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return err
	}
	group, err := os.ReadFile("/etc/group")
	if err != nil {
		return err
	}
	id := pickIdentity(string(passwd), string(group))
	spec := laptopSpec{UID: id.UID, GID: id.GID, Mounts: []string{dir},
		Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group")}
	if err := writeIdentityFiles(spec, string(passwd), string(group)); err != nil {
		return err
	}
	p, err := startLaptop(nil, id, spec)
	if err != nil {
		return fmt.Errorf("idmapped mounts, for the attendee to write as their owner (Linux 5.12 or later, the machine's root, "+
			"a filesystem that has them; tried in %s): %w", os.TempDir(), err)
	}
	p.stop()
	return nil
}

// firstID is where the attendee's ids start: Debian's first normal user's (adduser.conf).
const firstID = 1000

// pickIdentity chooses the attendee's ids from this machine's /etc/passwd and /etc/group: the
// first number from 1000 that is neither a user's nor a group's, and the docker group's gid (or
// the next free one).
func pickIdentity(passwd, group string) identity {
	users, groups := idsOf(passwd), idsOf(group)
	free := func(n int) bool { return !users[n] && !groups[n] }
	var id identity
	for id.UID = firstID; !free(id.UID); id.UID++ {
	}
	id.GID = id.UID
	if gid, ok := groupID(group, "docker"); ok {
		id.Docker = gid
		return id
	}
	for id.Docker = id.UID + 1; groups[id.Docker]; id.Docker++ {
	}
	return id
}

// idsOf returns the ids (third field) of a passwd or group file.
func idsOf(file string) map[int]bool {
	ids := map[int]bool{}
	for _, line := range strings.Split(file, "\n") {
		if f := strings.Split(line, ":"); len(f) > 2 {
			if n, err := strconv.Atoi(f[2]); err == nil {
				ids[n] = true
			}
		}
	}
	return ids
}

// groupID returns the gid of a group of a group file.
func groupID(group, name string) (int, bool) {
	for _, line := range strings.Split(group, "\n") {
		if f := strings.Split(line, ":"); len(f) > 2 && f[0] == name {
			n, err := strconv.Atoi(f[2])
			return n, err == nil
		}
	}
	return 0, false
}

// passwdWith is this machine's /etc/passwd with the attendee's line added: what os/user,
// ssh and `id` read in the lab.
func passwdWith(passwd string, id identity, home string) string {
	return withLine(passwd, fmt.Sprintf("%s:x:%d:%d:workshop attendee:%s:/bin/bash", AttendeeName, id.UID, id.GID, home))
}

// groupWith is this machine's /etc/group with the attendee's group added, and the attendee a
// member of the docker group (added as the lab's when this machine has none).
func groupWith(group string, id identity) string {
	var b strings.Builder
	member := false
	for _, line := range strings.SplitAfter(group, "\n") {
		text := strings.TrimRight(line, "\n")
		if f := strings.Split(text, ":"); len(f) == 4 && f[2] == strconv.Itoa(id.Docker) {
			member = true
			if f[3] == "" {
				f[3] = AttendeeName
			} else {
				f[3] += "," + AttendeeName
			}
			line = strings.Join(f, ":") + strings.TrimPrefix(line, text)
		}
		b.WriteString(line)
	}
	out := withLine(b.String(), fmt.Sprintf("%s:x:%d:", AttendeeName, id.GID))
	if !member {
		out = withLine(out, fmt.Sprintf("docker:x:%d:%s", id.Docker, AttendeeName))
	}
	return out
}

func withLine(file, line string) string {
	if file != "" && !strings.HasSuffix(file, "\n") {
		file += "\n"
	}
	return file + line + "\n"
}

// idMapping is the idmapped mounts' mapping, as a user namespace's uid_map (or gid_map) holds
// it: on-disk id 0 is the attendee's id; every other id is itself but the attendee's own, which
// has no mapping there (its files show as the overflow id, and nothing writes it).
func idMapping(id int) []syscall.SysProcIDMap {
	const last = 1<<32 - 2 // the largest id: 2^32-1 is "no id"
	return []syscall.SysProcIDMap{
		{ContainerID: 0, HostID: id, Size: 1},
		{ContainerID: 1, HostID: 1, Size: id - 1},
		{ContainerID: id + 1, HostID: id + 1, Size: last - id},
	}
}

// mountPoints are where the idmapped mounts go so that the attendee can write each of paths
// and reach it: a path's highest ancestor that others cannot enter (root's home, 0700, above
// Go's caches; a test's TMPDIR), else the path itself; nothing under another mount point. A
// path that does not exist yet counts as its nearest existing ancestor. stat is os.Stat but in
// tests.
func mountPoints(paths []string, stat func(string) (fs.FileInfo, error)) ([]string, error) {
	var points []string
	for _, p := range paths {
		p, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		for {
			if _, err := stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) || p == "/" {
				break
			}
			p = filepath.Dir(p)
		}
		point := p
		var ancestors []string
		for dir := p; dir != "/"; dir = filepath.Dir(dir) {
			ancestors = append(ancestors, dir)
		}
		for i := len(ancestors) - 1; i >= 0; i-- {
			info, err := stat(ancestors[i])
			if err != nil {
				return nil, fmt.Errorf("the way to %s: %w", p, err)
			}
			if info.Mode().Perm()&0o001 == 0 {
				point = ancestors[i]
				break
			}
		}
		points = append(points, point)
	}
	slices.Sort(points)
	points = slices.Compact(points)
	var top []string
	for _, p := range points {
		if len(top) == 0 || !(p == top[len(top)-1] || strings.HasPrefix(p, top[len(top)-1]+"/")) {
			top = append(top, p)
		}
	}
	return top, nil
}

// nobody is the kernel's overflow id (Debian's nobody and nogroup).
const nobody = 65534

// writeIdentityFiles writes the passwd and group files the laptop mounts over /etc's, owned by
// nobody on the disk: they are in a directory of the attendee's idmapped mounts (the run
// directory), where root's files are the attendee's to write, and an attendee who could write
// the lab's /etc/passwd could give root a password and become root with su.
func writeIdentityFiles(spec laptopSpec, passwd, group string) error {
	for _, f := range []struct{ path, text string }{{spec.Passwd, passwd}, {spec.Group, group}} {
		if err := os.WriteFile(f.path, []byte(f.text), 0o644); err != nil {
			return err
		}
		if err := os.Chown(f.path, nobody, nobody); err != nil {
			return err
		}
	}
	return nil
}

// laptopSpec is what the laptop process makes in its mount namespace.
type laptopSpec struct {
	UID, GID int
	// Mounts are made idmapped in place.
	Mounts []string
	// Passwd and Group are mounted over /etc/passwd and /etc/group.
	Passwd, Group string
}

// Hidden first arguments that make a program importing this package the lab's laptop (the
// process that holds its mount namespace) or the user namespace that carries the mounts'
// idmapping, when the lab runs it again as one.
const (
	laptopArg = "__kubelet-walkthrough-lab-laptop"
	usernsArg = "__kubelet-walkthrough-lab-userns"
)

func init() { runIfLaptop() }

// runIfLaptop makes this process the laptop, or the idmapping's user namespace, and exits when
// the lab ran it as one; it returns at once otherwise.
func runIfLaptop() {
	switch {
	case len(os.Args) == 2 && os.Args[1] == usernsArg:
		_, _ = io.Copy(io.Discard, os.Stdin) // until the laptop has its mounts
		os.Exit(0)
	case len(os.Args) == 3 && os.Args[1] == laptopArg:
		var spec laptopSpec
		err := json.Unmarshal([]byte(os.Args[2]), &spec)
		if err == nil {
			err = laptop(spec)
		}
		if err != nil {
			fmt.Println("laptop:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// laptop runs in a mount namespace of its own (Start clones one for it): it makes its mounts,
// says "ready", and holds the namespace until its standard input closes or it is killed (the
// engine's keeper ends it with the engine's PID namespace).
func laptop(spec laptopSpec) error {
	// Nothing made here reaches this machine's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	// A /proc of the PID namespace it runs in (the engine's): what the attendee's commands see of
	// processes, and where this process finds its children by their PIDs.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The idmapping is a user namespace's: a process of this program holds it while the mounts
	// take it.
	holder := exec.Command(self, usernsArg)
	holder.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: idMapping(spec.UID),
		GidMappings: idMapping(spec.GID),
	}
	release, err := holder.StdinPipe()
	if err != nil {
		return err
	}
	if err := holder.Start(); err != nil {
		return fmt.Errorf("a user namespace for the idmapping: %w", err)
	}
	defer func() { release.Close(); _ = holder.Wait() }()
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", holder.Process.Pid))
	if err != nil {
		return err
	}
	defer ns.Close()
	for _, dir := range spec.Mounts {
		if err := idmap(dir, int(ns.Fd())); err != nil {
			return err
		}
	}
	for _, f := range []struct{ from, to string }{{spec.Passwd, "/etc/passwd"}, {spec.Group, "/etc/group"}} {
		if err := unix.Mount(f.from, f.to, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mount %s over %s: %w", f.from, f.to, err)
		}
	}
	fmt.Println("ready")
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	closed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(closed) }()
	select {
	case <-signals:
	case <-closed:
	}
	return nil
}

// idmap mounts dir over itself, idmapped with the user namespace ns: its owner root's files
// are the attendee's, and what the attendee writes there is root's on the disk.
func idmap(dir string, ns int) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", dir, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns)}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("idmap %s (its file system must allow idmapped mounts: ext4, xfs, btrfs, tmpfs do): %w", dir, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount onto %s: %w", dir, err)
	}
	return nil
}

// laptopProcess is the running laptop: the nsenter that started it (in the laptop's mount
// namespace too), and the pipe whose closing ends it.
type laptopProcess struct {
	cmd     *exec.Cmd
	release io.Closer
	id      identity
}

// startLaptop starts the laptop process, in a clone of this machine's mount namespace and in
// the namespaces nsenter's flags enter name (the engine's network and PID namespaces: it ends
// with the engine), and waits until its mounts are made.
func startLaptop(enter []string, id identity, spec laptopSpec) (*laptopProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("nsenter", append(append([]string(nil), enter...), "--", self, laptopArg, string(data))...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGTERM, Setpgid: true}
	release, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("the lab's laptop: %w", err)
	}
	first, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(first) != "ready" {
		release.Close()
		_ = cmd.Wait()
		if err != nil {
			return nil, fmt.Errorf("the lab's laptop: %s: %w", strings.TrimSpace(first), err)
		}
		return nil, fmt.Errorf("the lab's laptop: %s", strings.TrimSpace(first))
	}
	return &laptopProcess{cmd: cmd, release: release, id: id}, nil
}

// stop ends the laptop; its mount namespace goes with it.
func (p *laptopProcess) stop() {
	p.release.Close()
	_ = p.cmd.Wait()
}

// enter are the arguments that run a command on the laptop, in dir, as the attendee: nsenter
// into the laptop's mount namespace (which leaves the command in its root directory, so env
// changes to dir there), setpriv to the attendee's ids.
func (p *laptopProcess) enter(dir string) []string {
	return []string{
		"--mount=/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/ns/mnt", "--",
		"setpriv", "--reuid=" + strconv.Itoa(p.id.UID), "--regid=" + strconv.Itoa(p.id.GID),
		"--groups=" + strconv.Itoa(p.id.GID) + "," + strconv.Itoa(p.id.Docker), "--",
		"env", "--chdir=" + dir, "--",
	}
}
