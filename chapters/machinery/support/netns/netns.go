// Package netns runs a program, or a test binary, again inside a private network namespace: a
// network of its own whose loopback interface also carries PrivateNodeIP. Nothing in there
// reaches any other host and nothing outside reaches in — only the file system is shared. It is
// how the mini-cluster of chapter 08 gets a node address that is not this machine's, and how the
// tests keep every packet they send on a network they made themselves.
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// PrivateNodeIP is the node address inside a private network namespace: not loopback, so the
// kubelet accepts it, global unicast, so the apiserver proxies to it, and on no network but the
// namespace's own `lo`.
const PrivateNodeIP = "10.200.0.1"

// insideEnv marks a process that runs inside the namespace; it holds the node IP.
const insideEnv = "WALKTHROUGH_PRIVATE_NETWORK"

// Inside says whether this process runs in the namespace Command made, and returns the node
// IP to use there.
func Inside() (string, bool) {
	ip := os.Getenv(insideEnv)
	return ip, ip != ""
}

// Command returns a command that runs this program again, with args, inside a new network
// namespace whose loopback interface is up and also carries PrivateNodeIP. As root it uses
// `unshare --net`; otherwise `unshare --map-root-user --net`, which needs unprivileged user
// namespaces.
func Command(args ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, errors.New("no `unshare` on PATH (util-linux): cannot make a private network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("no `ip` on PATH (iproute2): cannot configure the private network namespace")
	}
	flags := []string{"--net"}
	if os.Geteuid() != 0 {
		flags = []string{"--map-root-user", "--net"}
	}
	script := fmt.Sprintf(`ip link set lo up && ip addr add %s/32 dev lo && exec "$0" "$@"`, PrivateNodeIP)
	cmd := exec.Command(unshare, append(append(flags, "--", "/bin/sh", "-c", script, self), args...)...)
	cmd.Env = append(os.Environ(), insideEnv+"="+PrivateNodeIP)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd, nil
}

// Rerun runs this program again with args inside a private network namespace (Command) and
// waits for it. The child has its own process group, so Ctrl-C reaches this process only, which
// passes it on once when ctx ends; if this process dies, the child gets SIGTERM. A child that
// exited with status 1 printed its own error, as every chapter does: Rerun then returns
// program.ErrReported, so that it is not printed twice.
func Rerun(ctx context.Context, args ...string) error {
	child, err := Command(args...)
	if err != nil {
		return err
	}
	child.Stdin = nil
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := child.Start(); err != nil {
		return fmt.Errorf("start in a private network namespace: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case err = <-exited:
	case <-ctx.Done():
		_ = child.Process.Signal(syscall.SIGINT)
		err = <-exited
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return program.ErrReported
	}
	return err
}

// Available says whether a private network namespace can be made here (nil), or why not, with
// what to do about it.
func Available() error {
	cmd, err := Command()
	if err != nil {
		return err
	}
	// The same namespace and setup, running `true` instead of this program.
	cmd.Args[len(cmd.Args)-1] = "/bin/true"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if out, err := cmd.CombinedOutput(); err != nil {
		return explain(fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out))))
	}
	return nil
}

// apparmorRestriction is the switch with which Ubuntu (23.10 and later, 24.04 by default) lets
// only programs with an AppArmor profile make unprivileged user namespaces.
const apparmorRestriction = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"

// explain adds what a reader can do when no namespace could be made.
func explain(err error) error {
	return explainOn(err, os.Geteuid(), os.ReadFile)
}

// explainOn is explain for a user euid on a machine whose files readFile reads.
func explainOn(err error, euid int, readFile func(string) ([]byte, error)) error {
	if euid == 0 {
		return err
	}
	if data, rerr := readFile(apparmorRestriction); rerr == nil && strings.TrimSpace(string(data)) == "1" {
		return fmt.Errorf("%w\n  AppArmor blocks unprivileged user namespaces on this machine (kernel.apparmor_restrict_unprivileged_userns=1, "+
			"Ubuntu's default since 24.04). Either run the tests as root, or allow them until the next reboot with "+
			"`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`", err)
	}
	if data, rerr := readFile("/proc/sys/user/max_user_namespaces"); rerr == nil && strings.TrimSpace(string(data)) == "0" {
		return fmt.Errorf("%w\n  user namespaces are disabled (user.max_user_namespaces=0): run the tests as root, or raise it with `sudo sysctl user.max_user_namespaces=15000`", err)
	}
	return fmt.Errorf("%w\n  unprivileged user namespaces seem unavailable here: run the tests as root", err)
}

// RunInside runs this program again, with the same arguments, inside a private network
// namespace — unless it already runs in one. ran says the other run happened (exit with code);
// err says why no namespace could be made. Test packages call it from TestMain.
func RunInside() (ran bool, code int, err error) {
	if _, inside := Inside(); inside {
		return false, 0, nil
	}
	if err := Available(); err != nil {
		return false, 0, err
	}
	cmd, err := Command(os.Args[1:]...)
	if err != nil {
		return false, 0, err
	}
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return false, 0, err
	}
	return true, cmd.ProcessState.ExitCode(), nil
}

// AddAddress puts ip on the namespace's loopback interface beside PrivateNodeIP: an address a
// chapter's node must have (chapter 10's is the reading notes' 192.168.0.8). It refuses to run
// anywhere but in a namespace Command made — where lo is the only interface — since elsewhere
// it would change this machine's network.
func AddAddress(ip string) error {
	parsed := net.ParseIP(ip)
	if parsed == nil {
		return fmt.Errorf("%q is not an IP address", ip)
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	if _, inside := Inside(); !inside || len(ifaces) != 1 || ifaces[0].Name != "lo" {
		return fmt.Errorf("adding %s: not inside a private network namespace of this program's (its only interface is lo)", ip)
	}
	addrs, err := ifaces[0].Addrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(parsed) {
			return nil // an earlier run in this namespace added it
		}
	}
	bits := "32"
	if parsed.To4() == nil {
		bits = "128"
	}
	if out, err := exec.Command("ip", "addr", "add", ip+"/"+bits, "dev", "lo").CombinedOutput(); err != nil {
		return fmt.Errorf("ip addr add %s/%s dev lo: %w: %s", ip, bits, err, strings.TrimSpace(string(out)))
	}
	return nil
}
