package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/relay"
)

// The launcher is the node's "container runtime": a process of this program, on the host side
// of the node, that lives as long as the node. Start runs it in a network namespace of its own
// — minikube's Docker network, where the node's address is reachable — and it
//
//   - starts the node's first process in new namespaces (init.go),
//   - connects the node to its network with a veth pair (192.168.49.1 here, .2 in the node),
//   - relays 127.0.0.1:<port> to the node's apiserver, on the host and in its own namespace,
//     as minikube's Docker driver publishes 8443 on macOS,
//   - stops the node when told to (SIGTERM, or its parent's death when asked), as `docker
//     stop` does: SIGRTMIN+3 to systemd, SIGKILL after a grace period,
//   - and removes the node's cgroups once nothing runs in them.

// launch is what Start hands the launcher and the node's first process, in the run directory.
type launch struct {
	Dir        string `json:"dir"`
	Rootfs     string `json:"rootfs"`
	Components string `json:"components"`
	Hostname   string `json:"hostname"`
	// KubernetesVersion is the version of the node's components.
	KubernetesVersion string      `json:"kubernetesVersion"`
	Cgroups           []hierarchy `json:"cgroups"`
	// Network is the node's network: the node's address, the gateway's (the launcher's side)
	// and the prefix length.
	NodeIP, GatewayIP string
	PrefixLength      int
	// APIServerPort is the apiserver's port in the node (8443); RelayPort the port on
	// 127.0.0.1 that reaches it.
	APIServerPort, RelayPort int
	// StopTimeout is how long systemd gets to stop before the node is killed.
	StopTimeout time.Duration
}

const launchFile = "launch.json"

func writeLaunch(l *launch) error { return writeJSON(filepath.Join(l.Dir, launchFile), l, 0o600) }

func readLaunch(dir string) (*launch, error) {
	var l launch
	return &l, readJSON(filepath.Join(dir, launchFile), &l)
}

// writeJSON writes v as JSON, in a file that readers never see half-written.
func writeJSON(path string, v any, mode os.FileMode) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data, mode)
}

// readJSON reads what writeJSON wrote.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeFileAtomic writes a file that readers never see half-written.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// The launcher's file descriptors beyond stdio, in order.
const (
	fdRelayListener = 3 // 127.0.0.1:RelayPort on the host, made by Start
)

// runLauncher is the launcher's main: it returns when the node has stopped and its cgroups
// are gone.
func runLauncher(dir string) error {
	cfg, err := readLaunch(dir)
	if err != nil {
		return err
	}
	st := &State{Dir: dir, LauncherPID: os.Getpid(), IP: cfg.NodeIP, RelayPort: cfg.RelayPort, Phase: PhaseStarting}
	fail := func(err error) error {
		st.Phase, st.Error = PhaseStopped, err.Error()
		_ = st.save()
		return err
	}
	stop := make(chan os.Signal, 2)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	if err := run("ip", "link", "set", "lo", "up"); err != nil {
		return fail(err)
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	initLog, err := os.OpenFile(filepath.Join(dir, "init.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(self, initCommand, dir)
	cmd.Stdout, cmd.Stderr = initLog, initLog
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWNET,
		Setsid:     true,
	}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start the node: %w", err))
	}
	_ = initLog.Close()
	st.NodePID = cmd.Process.Pid
	if st.PIDNamespace, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", st.NodePID)); err != nil {
		_ = cmd.Process.Kill()
		return fail(err)
	}
	for _, ns := range []string{fmt.Sprintf("/proc/%d/ns/mnt", st.NodePID), fmt.Sprintf("/proc/%d/ns/net", st.NodePID), "/proc/self/ns/net"} {
		if link, err := os.Readlink(ns); err == nil {
			st.Namespaces = append(st.Namespaces, link)
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	if err := connect(cfg, st.NodePID); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		_ = removeCgroups(cfg.Cgroups)
		return fail(fmt.Errorf("connect the node to its network: %w", err))
	}
	relays, err := startRelays(cfg)
	if err != nil {
		_ = cmd.Process.Kill()
		<-exited
		_ = removeCgroups(cfg.Cgroups)
		return fail(err)
	}
	st.Phase = PhaseRunning
	if err := st.save(); err != nil {
		return err
	}

	select {
	case err = <-exited:
	case <-stop:
		err = stopNode(cmd.Process, exited, cfg.StopTimeout)
	}
	relays.close()
	// A process someone entered into the node's mount or network namespace but not its PID
	// namespace (`nsenter -m -n` without -p) outlives the node and keeps its mounts alive.
	killHolders(st.Namespaces[:min(2, len(st.Namespaces))])
	cleanup := removeCgroups(cfg.Cgroups)
	st.Phase, st.NodePID = PhaseStopped, 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			st.Error = err.Error()
		}
	}
	if cleanup != nil {
		st.Error = cleanup.Error()
	}
	return errors.Join(st.save(), cleanup)
}

// killHolders kills, by PID, every process still in one of these namespaces.
func killHolders(namespaces []string) {
	for round := 0; round < 20; round++ {
		links, _ := filepath.Glob("/proc/[0-9]*/ns/*")
		var pids []int
		for _, l := range links {
			if ns, err := os.Readlink(l); err == nil && slices.Contains(namespaces, ns) {
				if pid, err := strconv.Atoi(strings.Split(l, "/")[2]); err == nil && pid != os.Getpid() {
					pids = append(pids, pid)
				}
			}
		}
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopNode is `docker stop`: SIGRTMIN+3, which systemd takes as "halt", then SIGKILL for
// the node's PID 1, which ends every process of the node's PID namespace.
func stopNode(p *os.Process, exited <-chan error, grace time.Duration) error {
	_ = p.Signal(sigRTMin3)
	select {
	case err := <-exited:
		return err
	case <-time.After(grace):
		_ = p.Kill()
		return <-exited
	}
}

// connect makes the node's network: a veth pair from the launcher's namespace into the node's,
// the gateway address on this side, the node's address and a default route on the other.
func connect(cfg *launch, nodePID int) error {
	pid := strconv.Itoa(nodePID)
	prefix := "/" + strconv.Itoa(cfg.PrefixLength)
	steps := [][]string{
		{"ip", "link", "add", "minikube", "type", "veth", "peer", "name", "eth0", "netns", pid},
		{"ip", "addr", "add", cfg.GatewayIP + prefix, "dev", "minikube"},
		{"ip", "link", "set", "minikube", "up"},
		{"nsenter", "-t", pid, "-n", "ip", "link", "set", "lo", "up"},
		{"nsenter", "-t", pid, "-n", "ip", "addr", "add", cfg.NodeIP + prefix, "dev", "eth0"},
		{"nsenter", "-t", pid, "-n", "ip", "link", "set", "eth0", "up"},
		{"nsenter", "-t", pid, "-n", "ip", "route", "add", "default", "via", cfg.GatewayIP},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, out)
	}
	return nil
}

// relays forward TCP connections to the node's apiserver.
type relays struct {
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startRelays listens on the host's 127.0.0.1:RelayPort (the descriptor Start passed) and on
// the same port of this namespace's loopback, and joins each connection to the apiserver.
func startRelays(cfg *launch) (*relays, error) {
	host, err := net.FileListener(os.NewFile(fdRelayListener, "relay"))
	if err != nil {
		return nil, fmt.Errorf("the host's relay socket: %w", err)
	}
	local, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.RelayPort)))
	if err != nil {
		_ = host.Close()
		return nil, fmt.Errorf("relay in the node's network: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &relays{stop: stop}
	target := net.JoinHostPort(cfg.NodeIP, strconv.Itoa(cfg.APIServerPort))
	dial := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", target)
	}
	for _, l := range []net.Listener{host, local} {
		r.wg.Go(func() { relay.Serve(ctx, l, dial) })
	}
	return r, nil
}

func (r *relays) close() {
	r.stop()
	r.wg.Wait()
}

// sigRTMin3 is SIGRTMIN+3, what `docker stop` sends to kicbase (its STOPSIGNAL) and systemd
// halts on: the kernel's real-time signals start at 32, C libraries keep the first two, so a
// C program's SIGRTMIN is 34 and SIGRTMIN+3 is 37.
const sigRTMin3 = syscall.Signal(37)
