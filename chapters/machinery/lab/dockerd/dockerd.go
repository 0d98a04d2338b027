// Package dockerd runs a real Docker engine — Debian's docker.io, the dockerd a reader installs —
// in namespaces of its own, so that real minikube can make its node with it here and leave
// nothing behind: its own mount namespace (a fresh /run and /proc, so that it neither finds nor
// touches a Docker or containerd of this machine), its own network namespace (its bridges,
// iptables rules and the node's address exist only there), its own PID namespace (when its
// keeper ends, every process of it ends), its own data root, exec root, socket, configuration
// file and cgroup parent.
//
// A keeper process owns the namespaces: this program run again with a hidden first argument,
// which this package's init recognises (so any program or test binary that imports it can
// start an engine). It starts dockerd, and when it is
// told to stop — or the process that started it dies — it stops dockerd (which stops its
// containers), ends whatever is left, and removes the cgroups dockerd made.
package dockerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options configure an engine.
type Options struct {
	// Dir is the engine's run directory: socket, data root, log. It must exist.
	Dir string
	// Runtime is an OCI runtime to register as Docker's default instead of runc (the lab's
	// runcshim, on machines whose capability bounding set needs it); "" keeps runc.
	Runtime string
	// SocketGroup is the group that owns the engine's socket (dockerd's --group, a name or a
	// gid), whose members use the engine as the docker group's do; "" is dockerd's default, the
	// group docker where it exists.
	SocketGroup string
	// RemoveOnExit is a directory (Dir, or one above it) the keeper removes when it ends, also
	// when the process that started it died first; "" keeps it.
	RemoveOnExit string
	// TCP is an address in the engine's network namespace where dockerd serves its API too,
	// without TLS ("127.0.0.1:2375"): a DOCKER_HOST of tcp://, as minikube sees a remote engine
	// or Docker Desktop's. Only processes in that namespace reach it. "": the socket only.
	TCP string
	// DNS are the nameservers the containers' resolv.conf names (dockerd's dns); none: this
	// machine's, which the engine's network does not reach, so that a lookup there waits for its
	// timeouts (5 s a try) before it fails.
	DNS []string
}

// Engine is a running Docker engine.
type Engine struct {
	// Dir is the run directory; Socket the engine's API socket in it.
	Dir, Socket string
	// CgroupParent is the cgroup under which dockerd makes its containers' cgroups.
	CgroupParent string
	// TCP is Options.TCP: where the engine serves its API in its network namespace too.
	TCP       string
	keeper    *exec.Cmd
	exited    chan struct{}
	keeperErr error
}

// Files in the run directory.
const (
	socketFile = "docker.sock"
	logFile    = "dockerd.log"
	configFile = "daemon.json"
	stateFile  = "engine.json"
)

// State is what an engine's run directory records of it (engine.json), so that another process
// can tell, after the engine stopped or its starter died, what to look for.
type State struct {
	KeeperPID    int
	CgroupParent string
	// NetNS is the engine's network namespace, as /proc/PID/ns/net links to it.
	NetNS string
}

// ReadState reads what an engine's run directory records of it.
func ReadState(dir string) (State, error) {
	var st State
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(data, &st)
}

// keeperArg is the hidden first argument that makes this program an engine's keeper.
const keeperArg = "__kubelet-walkthrough-docker-keeper"

// Requirements says what this machine lacks to run an engine (nil: nothing).
func Requirements() error {
	// Root first: a normal user's PATH often lacks /usr/sbin, where dockerd is, and root is what
	// it lacks in the first place.
	if !RealRoot() {
		return errors.New("a Docker engine in namespaces of its own needs root (the machine's: uid 0 in a user namespace is not)")
	}
	var missing []string
	for _, p := range []struct{ program, pkg string }{
		{"dockerd", "docker.io"}, {"docker", "docker.io"}, {"runc", "runc"}, {"ip", "iproute2"},
	} {
		if _, err := exec.LookPath(p.program); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", p.program, p.pkg))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a Docker engine needs %s on PATH: apt-get install docker.io", strings.Join(missing, ", "))
	}
	return nil
}

// Start starts an engine and returns when it answers on its socket.
func Start(ctx context.Context, opts Options) (*Engine, error) {
	if err := Requirements(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	e := &Engine{Dir: dir, Socket: filepath.Join(dir, socketFile), CgroupParent: cgroupParent(), TCP: opts.TCP, exited: make(chan struct{})}
	if len(e.Socket) >= 108 { // sun_path holds 108 bytes, with the final NUL
		return nil, fmt.Errorf("the engine's socket %s is longer than a unix socket path may be (107 bytes): choose a shorter run directory", e.Socket)
	}
	config := map[string]any{
		// dockerd keeps its identity key in /etc/docker unless told otherwise.
		"deprecated-key-path": filepath.Join(dir, "key.json"),
		"exec-opts":           []string{"native.cgroupdriver=cgroupfs"},
	}
	hosts := []string{"unix://" + e.Socket}
	if opts.TCP != "" {
		hosts = append(hosts, "tcp://"+opts.TCP)
	}
	config["hosts"] = hosts
	if opts.SocketGroup != "" {
		config["group"] = opts.SocketGroup
	}
	if len(opts.DNS) > 0 {
		config["dns"] = opts.DNS
	}
	if opts.Runtime != "" {
		config["runtimes"] = map[string]any{"runcshim": map[string]string{"path": opts.Runtime}}
		config["default-runtime"] = "runcshim"
	}
	data, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, configFile), data, 0o644); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, logFile))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	e.keeper = exec.Command(self, keeperArg, dir, e.CgroupParent, opts.RemoveOnExit)
	e.keeper.Stdout, e.keeper.Stderr = log, log
	e.keeper.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGTERM,
		Setpgid:    true, // Ctrl-C on the terminal reaches the caller, which stops the engine in order
	}
	// Pdeathsig is sent when the thread that started the keeper ends, not the process: a goroutine
	// that ends locked to a thread ends it (a test that dials into a network namespace does), and
	// the engine would stop under its caller. The goroutine that starts the keeper keeps its thread
	// until the keeper exits.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := e.keeper.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		e.keeperErr = e.keeper.Wait()
		close(e.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start the engine's keeper: %w", err)
	}
	st := State{KeeperPID: e.PID(), CgroupParent: e.CgroupParent}
	st.NetNS, _ = os.Readlink(e.NetNS())
	if data, err := json.Marshal(st); err == nil {
		_ = os.WriteFile(filepath.Join(dir, stateFile), data, 0o644)
	}
	if err := e.waitReady(ctx, 2*time.Minute); err != nil {
		_ = e.Stop(context.Background())
		return nil, err
	}
	return e, nil
}

// CgroupPrefix begins the name of every engine's cgroup parent.
const CgroupPrefix = "kubelet-walkthrough-docker-"

// cgroupParent names a cgroup parent of the engine's own.
func cgroupParent() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "/" + CgroupPrefix + hex.EncodeToString(b)
}

// waitReady polls the engine's /_ping until it answers OK.
func (e *Engine) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := e.HTTPClient()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-e.exited:
			return fmt.Errorf("dockerd exited before it answered (%v): %s", e.keeperErr, e.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("dockerd did not answer on %s: %w: %s", e.Socket, ctx.Err(), e.LogTail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// HTTPClient talks to the engine's API.
func (e *Engine) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.Socket)
	}}}
}

// LogTail returns the last n lines of dockerd's log.
func (e *Engine) LogTail(n int) string {
	data, _ := os.ReadFile(filepath.Join(e.Dir, logFile))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PID is the keeper's process ID on this machine.
func (e *Engine) PID() int { return e.keeper.Process.Pid }

// NetNS is the engine's network namespace, as a path nsenter --net= takes.
func (e *Engine) NetNS() string { return "/proc/" + strconv.Itoa(e.PID()) + "/ns/net" }

// Enter are nsenter's flags that enter the engine's network and PID namespaces: what runs
// there reaches the engine's containers by their addresses and published ports, and ends when
// the engine's keeper does.
func (e *Engine) Enter() []string {
	proc := "/proc/" + strconv.Itoa(e.PID()) + "/ns/"
	return []string{"--net=" + proc + "net", "--pid=" + proc + "pid"}
}

// Stop stops the engine: dockerd stops its containers, the keeper ends what is left and removes
// the cgroups. It returns when the keeper has exited.
func (e *Engine) Stop(ctx context.Context) error {
	select {
	case <-e.exited:
	default:
		_ = e.keeper.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.exited:
		case <-ctx.Done():
			_ = e.keeper.Process.Kill()
			<-e.exited
			return fmt.Errorf("the engine did not stop: %w (killed its keeper)", ctx.Err())
		case <-time.After(keeperGrace + 30*time.Second):
			_ = e.keeper.Process.Kill()
			<-e.exited
			return errors.New("the engine did not stop in time (killed its keeper)")
		}
	}
	var exit *exec.ExitError
	if errors.As(e.keeperErr, &exit) {
		return fmt.Errorf("the engine's keeper: %w: %s", e.keeperErr, e.LogTail(10))
	}
	return e.keeperErr
}
