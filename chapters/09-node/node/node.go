// Package node boots a node shaped like the one minikube's Docker driver makes — systemd as
// PID 1 of a root file system of its own, containerd, and a kubelet unit that kubeadm
// configures — in private mount, PID, network, UTS, IPC and cgroup namespaces of this machine,
// and tears it down leaving nothing behind.
//
// What Docker does for minikube, this package does with the kernel directly: the launcher
// (launcher.go) is the container runtime, the node's first process (init.go) is the
// container's entry point, and Exec is `docker exec`. Kubernetes itself — kubeadm, the
// kubelet, etcd, kube-apiserver… — is the real thing, built from the pinned module.
package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Hidden subcommands with which a program that uses this package runs its launcher and the
// node's first process: Commands adds them to the program's root command.
const (
	launcherCommand = "__node-launcher"
	initCommand     = "__node-init"
)

// Commands are the hidden subcommands a program that starts nodes must have (Start runs the
// program itself again with them).
func Commands() []*cobra.Command {
	return []*cobra.Command{
		{Use: launcherCommand + " DIR", Hidden: true, Args: cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error { return runLauncher(args[0]) }},
		{Use: initCommand + " DIR", Hidden: true, Args: cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error { return runInit(args[0]) }},
	}
}

// Where the node's pieces are inside the node.
const (
	componentsInNode = "/opt/walkthrough" // the components, bind-mounted read-only
)

// Network defaults: minikube's first Docker network, 192.168.49.0/24, gateway .1, node .2.
const (
	DefaultNodeIP    = "192.168.49.2"
	DefaultGatewayIP = "192.168.49.1"
	DefaultHostname  = "minikube"
	APIServerPort    = 8443
)

// Options say which node to start.
type Options struct {
	// Dir is the run directory: the node's state, its changes to the root file system,
	// containerd's data. Everything the node writes on this machine is in there.
	Dir string
	// Rootfs is the pristine root file system (debootstrap, see EnsureRootfs); Components
	// the directory of binaries and images the node runs (`make node-components`).
	Rootfs, Components string
	// KubernetesVersion is the version the components were built at ("v1.37.2").
	KubernetesVersion string
	// Hostname is the node's name (default "minikube").
	Hostname string
	// RelayPort is the port on 127.0.0.1 that reaches the apiserver; 0 picks one.
	RelayPort int
	// Restart boots a stopped node again with its files and containerd's data kept, as
	// `minikube start` restarts a stopped node's container with its /var volume.
	Restart bool
	// StopWithParent stops the node when the calling process dies (a chapter that serves
	// until Ctrl-C); without it the node runs on, like `minikube start`'s.
	StopWithParent bool
	// ExtraConfig holds minikube's --extra-config values for the kubelet and kubeadm.
	ExtraConfig ExtraConfig
	// Log receives a line per step, for the reader.
	Log io.Writer
}

// Phase is where a node is in its life.
type Phase string

const (
	PhaseStarting Phase = "Starting"
	PhaseRunning  Phase = "Running"
	PhaseStopped  Phase = "Stopped"
)

// State is what a node's launcher records in the run directory, for the programs that find
// the node later (Stop, Exec, the minikube command).
type State struct {
	Dir          string `json:"dir"`
	LauncherPID  int    `json:"launcherPID"`
	NodePID      int    `json:"nodePID"` // the node's PID 1 (systemd), as this machine numbers it
	PIDNamespace string `json:"pidNamespace"`
	// Namespaces are the node's and the launcher's namespaces ("net:[4026532...]"), by which
	// anything still holding one can be found after a stop.
	Namespaces []string `json:"namespaces,omitempty"`
	IP         string   `json:"ip"`
	RelayPort  int      `json:"relayPort"`
	Phase      Phase    `json:"phase"`
	Error      string   `json:"error,omitempty"`
}

const stateFile = "state.json"

func (s *State) save() error { return writeJSON(filepath.Join(s.Dir, stateFile), s, 0o644) }

// ReadState reads the state of the node whose run directory is dir.
func ReadState(dir string) (*State, error) {
	var s State
	if err := readJSON(filepath.Join(dir, stateFile), &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// alive says whether pid still is the process the state recorded (PIDs are reused).
func alive(pid int, pidNamespace string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if _, rest, ok := strings.Cut(string(data), ") "); ok && strings.HasPrefix(rest, "Z") {
		return false // a zombie: its parent has not collected it yet
	}
	if pidNamespace == "" {
		return true
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	return err == nil && ns == pidNamespace
}

// Running says whether the node's systemd still runs.
func (s *State) Running() bool {
	return s.Phase == PhaseRunning && alive(s.NodePID, s.PIDNamespace)
}

// Node is a started node.
type Node struct {
	opts  Options
	State *State
	// APIServer is the apiserver's address through the relay: https://127.0.0.1:<port>.
	APIServer string
	// Timings are how long after Start began each milestone was reached.
	Timings  Timings
	launcher *exec.Cmd // when this process started it
	started  time.Time
}

// Timings are the node's milestones, measured from the start of Start.
type Timings struct {
	Systemd      time.Duration // systemd has booted: containerd and the kubelet unit are up
	ImagesLoaded time.Duration // containerd has kubeadm's images
	KubeadmDone  time.Duration // kubeadm init has returned
	Ready        time.Duration // the Node and every kube-system pod are Ready
}

// Requirements says what this machine lacks to run a node (nil: nothing), each with what to do.
func Requirements(opts Options) error {
	var missing []error
	if os.Geteuid() != 0 {
		missing = append(missing, errors.New("root: the node needs new namespaces, cgroups and mounts (run as root, e.g. `sudo -E make run-09-node`)"))
	}
	for _, tool := range []string{"ip", "nsenter", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, fmt.Errorf("%s on PATH (Debian: apt-get install iproute2 util-linux)", tool))
		}
	}
	if opts.Components != "" {
		for _, f := range []string{"bin/kubeadm", "bin/kubelet", "bin/containerd", "bin/runc", "bin/crictl", "cni/bridge"} {
			if _, err := os.Stat(filepath.Join(opts.Components, f)); err != nil {
				missing = append(missing, fmt.Errorf("%s (build the node's components: make node-components)", filepath.Join(opts.Components, f)))
			}
		}
	}
	if opts.Rootfs != "" {
		if _, err := os.Stat(filepath.Join(opts.Rootfs, rootfsDone)); err != nil {
			missing = append(missing, fmt.Errorf("the node's root file system in %s (make node-rootfs)", opts.Rootfs))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("this machine cannot run the node; it needs: %w", errors.Join(missing...))
}

// Start boots a node: systemd up, containerd and the kubelet unit installed, nothing of
// Kubernetes configured yet (Bootstrap does that, with kubeadm).
func Start(ctx context.Context, opts Options) (_ *Node, err error) {
	if opts.Hostname == "" {
		opts.Hostname = DefaultHostname
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if err := Requirements(opts); err != nil {
		return nil, err
	}
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, err
	}
	if st, err := ReadState(opts.Dir); err == nil && (alive(st.LauncherPID, "") || st.Running()) {
		return nil, fmt.Errorf("a node already runs from %s (launcher PID %d)", opts.Dir, st.LauncherPID)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	// A fresh run directory: the node's files of an earlier run go, unless it restarts.
	fresh := []string{"upper", "work", "containerd", "merged"}
	if opts.Restart {
		fresh = []string{"work", "merged"}
	}
	for _, d := range fresh {
		if err := os.RemoveAll(filepath.Join(opts.Dir, d)); err != nil {
			return nil, err
		}
	}
	cfg := &launch{
		Dir: opts.Dir, Rootfs: opts.Rootfs, Components: opts.Components, Hostname: opts.Hostname, KubernetesVersion: opts.KubernetesVersion,
		NodeIP: DefaultNodeIP, GatewayIP: DefaultGatewayIP, PrefixLength: 24,
		APIServerPort: APIServerPort, StopTimeout: 30 * time.Second,
	}
	if cfg.Cgroups, err = hostHierarchies("kubelet-walkthrough-" + strconv.Itoa(os.Getpid())); err != nil {
		return nil, err
	}
	if err := writeNodeFiles(opts, cfg); err != nil {
		return nil, err
	}
	if err := createCgroups(cfg.Cgroups); err != nil {
		_ = removeCgroups(cfg.Cgroups)
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.RelayPort)))
	if err != nil {
		_ = removeCgroups(cfg.Cgroups)
		return nil, fmt.Errorf("relay port: %w", err)
	}
	cfg.RelayPort = l.Addr().(*net.TCPAddr).Port
	listener, err := l.(*net.TCPListener).File()
	_ = l.Close()
	if err != nil {
		_ = removeCgroups(cfg.Cgroups)
		return nil, err
	}
	defer func() { _ = listener.Close() }()
	if err := writeLaunch(cfg); err != nil {
		_ = removeCgroups(cfg.Cgroups)
		return nil, err
	}
	_ = os.Remove(filepath.Join(opts.Dir, stateFile))

	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(opts.Dir, "launcher.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	launcher := exec.Command(self, launcherCommand, opts.Dir)
	launcher.Stdout, launcher.Stderr = logFile, logFile
	launcher.ExtraFiles = []*os.File{listener}
	launcher.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setsid: true}
	if opts.StopWithParent {
		launcher.SysProcAttr.Pdeathsig = syscall.SIGTERM
	}
	start := time.Now()
	if err := launcher.Start(); err != nil {
		_ = removeCgroups(cfg.Cgroups)
		return nil, fmt.Errorf("start the node's launcher: %w", err)
	}
	n := &Node{opts: opts, APIServer: "https://127.0.0.1:" + strconv.Itoa(cfg.RelayPort), started: start}
	launcherPID := launcher.Process.Pid
	if opts.StopWithParent {
		n.launcher = launcher
	} else {
		_ = launcher.Process.Release()
	}
	defer func() {
		if err != nil {
			_ = n.Stop(context.Background())
		}
	}()
	if n.State, err = waitForPhase(ctx, opts.Dir, launcherPID); err != nil {
		return n, err
	}
	fmt.Fprintf(opts.Log, "[%5.1fs] node %q: its own namespaces, cgroups and root file system; systemd is PID 1 (PID %d here)\n",
		time.Since(start).Seconds(), opts.Hostname, n.State.NodePID)
	if err := n.waitForSystemd(ctx); err != nil {
		return n, err
	}
	n.Timings.Systemd = time.Since(start)
	fmt.Fprintf(opts.Log, "[%5.1fs] systemd is running: containerd and the kubelet unit are started\n", time.Since(start).Seconds())
	return n, nil
}

// waitForSystemd waits until systemd in the node has finished booting, with every unit up:
// `systemctl is-system-running --wait` blocks while it boots, once systemd answers at all.
func (n *Node) waitForSystemd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		out, err := n.Output(ctx, "systemctl", "is-system-running", "--wait")
		state := strings.TrimSpace(string(out))
		switch state {
		case "running":
			return nil
		case "degraded", "maintenance", "stopping":
			failed, _ := n.Output(ctx, "systemctl", "--failed", "--no-legend")
			return fmt.Errorf("systemd in the node is %s; failed units:\n%s", state, failed)
		}
		if !n.State.Running() {
			return fmt.Errorf("the node stopped while booting%s", tail(filepath.Join(n.dir(), "init.log")))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("systemd in the node did not finish booting (%q, %v): %w", state, err, ctx.Err())
		case <-time.After(50 * time.Millisecond): // "offline": PID 1 is not systemd yet
		}
	}
}

// waitForPhase waits until the launcher says the node runs, or fails.
func waitForPhase(ctx context.Context, dir string, launcherPID int) (*State, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		st, err := ReadState(dir)
		if err == nil && st.Phase == PhaseRunning {
			return st, nil
		}
		if err == nil && st.Phase == PhaseStopped {
			return nil, fmt.Errorf("the node did not start: %s%s", st.Error, tail(filepath.Join(dir, "init.log")))
		}
		if !alive(launcherPID, "") {
			return nil, fmt.Errorf("the node's launcher exited%s%s", tail(filepath.Join(dir, "launcher.log")), tail(filepath.Join(dir, "init.log")))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the node did not start: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tail returns the last lines of a log file, for an error message.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "\n  " + filepath.Base(path) + ":\n    " + strings.Join(lines, "\n    ")
}

// Open finds the node whose run directory is dir.
func Open(dir string) (*Node, error) {
	st, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := readLaunch(dir)
	if err != nil {
		return nil, err
	}
	opts := Options{Dir: dir, Rootfs: cfg.Rootfs, Components: cfg.Components, KubernetesVersion: cfg.KubernetesVersion,
		Hostname: cfg.Hostname, Log: io.Discard}
	return &Node{opts: opts, State: st, APIServer: "https://127.0.0.1:" + strconv.Itoa(st.RelayPort)}, nil
}

// nodeEnv is the environment of commands run in the node, as a login there would have it.
var nodeEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TERM=dumb", "LANG=C.UTF-8"}

// Command returns a command that runs args in the node, as root — `docker exec`: in all of the
// node's namespaces, with its root directory.
func (n *Node) Command(ctx context.Context, args ...string) *exec.Cmd {
	pid := strconv.Itoa(n.State.NodePID)
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", pid, "-m", "-u", "-i", "-n", "-p", "-C", "-r", "-w", "--"}, args...)...)
	cmd.Env = nodeEnv
	return cmd
}

// CommandAs returns a command that runs args in the node as user, the way an ssh session
// would: the user's HOME, USER, LOGNAME and SHELL, Debian's default PATH for a login, and the
// home directory as working directory.
func (n *Node) CommandAs(ctx context.Context, user string, args ...string) *exec.Cmd {
	home := "/home/" + user
	if user == "root" {
		home = "/root"
	}
	cmd := n.Command(ctx, append([]string{"/usr/sbin/runuser", "-u", user, "--", "/usr/bin/env", "-C", home}, args...)...)
	cmd.Env = []string{"HOME=" + home, "USER=" + user, "LOGNAME=" + user, "SHELL=/bin/bash",
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/games", "LANG=C.UTF-8", "TERM=" + termOr("dumb")}
	return cmd
}

func termOr(fallback string) string {
	if t := os.Getenv("TERM"); t != "" {
		return t
	}
	return fallback
}

// Output runs args in the node and returns what it printed on stdout.
func (n *Node) Output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := n.Command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s in the node: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Stop stops the node as `docker stop` does and waits until its launcher has removed its
// cgroups. A node whose launcher is gone (killed) is killed and cleaned up here.
func (n *Node) Stop(ctx context.Context) error {
	st, err := ReadState(n.dir())
	if err != nil {
		if n.State == nil {
			return err
		}
		st = n.State
	}
	if alive(st.LauncherPID, "") && isLauncher(st.LauncherPID, n.dir()) {
		_ = syscall.Kill(st.LauncherPID, syscall.SIGTERM)
		if !n.waitForLauncher(ctx, st.LauncherPID, 45*time.Second) {
			_ = syscall.Kill(st.LauncherPID, syscall.SIGKILL)
		}
	}
	// Whatever the launcher could not do.
	if alive(st.NodePID, st.PIDNamespace) {
		_ = syscall.Kill(st.NodePID, syscall.SIGKILL)
	}
	killHolders(st.Namespaces[:min(2, len(st.Namespaces))])
	cfg, err := readLaunch(n.dir())
	if err != nil {
		return err
	}
	return removeCgroups(cfg.Cgroups)
}

// waitForLauncher waits until the launcher has exited (it stops the node and removes its
// cgroups first), for at most timeout or until ctx ends; it says whether it did.
func (n *Node) waitForLauncher(ctx context.Context, pid int, timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if n.launcher != nil { // our child: collect it
			_ = n.launcher.Wait()
			return
		}
		for alive(pid, "") {
			time.Sleep(50 * time.Millisecond)
		}
	}()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
	case <-ctx.Done():
	}
	return false
}

func (n *Node) dir() string {
	if n.State != nil {
		return n.State.Dir
	}
	return n.opts.Dir
}

// isLauncher says whether pid runs this package's launcher for dir.
func isLauncher(pid int, dir string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	return len(args) == 3 && args[1] == launcherCommand && args[2] == dir
}
