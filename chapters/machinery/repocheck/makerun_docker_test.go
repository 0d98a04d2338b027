package repocheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/dockerd"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/syncbuf"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/terminal"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// dockerTier is the tier of the tests that run chapters on a real Docker engine.
const dockerTier = "Docker (a real engine in namespaces of the test's own)"

// TestMakeRunInDocker runs chapters as `make run` runs them on macOS and Windows, with RUN_IN=docker:
// through .ci/in-docker, on a real Docker engine (Debian's dockerd, in namespaces of the test's own:
// chapters/machinery/lab/dockerd), from the run image's equivalent (make run-image), at a terminal.
// Chapter 04's /pods answers on the port the chapter prints, published by the engine (asked from
// the engine's network namespace, as a laptop's processes share the network where Docker publishes);
// chapter 08's cluster runs in its private network namespace and answers, through its published
// port, with the kubeconfig it wrote into the checkout; chapter 13's Delve stops at each step of the
// chain, and `make debug-NN-name`'s Delve at a breakpoint typed at its prompt; Ctrl-C stops each,
// and no container is left. Go's caches are this machine's, mounted at their own paths, and nothing
// is downloaded (GOPROXY=off): the engine's network reaches nothing else.
func TestMakeRunInDocker(t *testing.T) {
	tier.Require(t, dockerTier, dockerd.Requirements())
	tier.Long(t, "chapters in Docker (a link of each chapter, and the run image loaded)")
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	archive := filepath.Join(root, ".bin", "docker", "run-image.tar")
	if _, err := os.Stat(archive); err != nil {
		tier.Unavailable(t, dockerTier, fmt.Errorf("no run image (make run-image, as root, makes it): %w", err))
	}
	dir, err := os.MkdirTemp("", "kw-docker-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// Its containers' lookups fail at once (no DNS server answers on their 127.0.0.1), as on a
	// laptop where the kubelet's lookup of its node name comes back at once: the engine's network
	// reaches no DNS server, and each lookup would wait 10 s for its timeouts.
	engine, err := dockerd.Start(ctx, dockerd.Options{Dir: dir, DNS: []string{"127.0.0.1"}})
	require.NoError(t, err)
	defer func() { assert.NoError(t, engine.Stop(context.Background())) }()

	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	env := append(repo.MakeEnv(), "DOCKER_HOST=unix://"+engine.Socket, "GOPROXY=off", "TMPDIR="+t.TempDir(),
		"GOCACHE_VOLUME="+goEnv("GOCACHE"), "GOMODCACHE_VOLUME="+goEnv("GOMODCACHE"))
	docker := func(args ...string) string {
		cmd := exec.Command("docker", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "docker %s: %s", strings.Join(args, " "), out)
		return strings.TrimSpace(string(out))
	}
	start := time.Now()
	docker("load", "--quiet", "--input", archive)
	image, err := exec.Command("../.ci/in-docker", "image").Output()
	require.NoError(t, err)
	docker("image", "inspect", strings.TrimSpace(string(image))) // make run-image names it as .ci/in-docker does
	t.Logf("engine started and run image loaded in %s", time.Since(start).Round(100*time.Millisecond))
	// Chapter 13 builds Delve from its pinned module: its modules in this machine's cache.
	delve := exec.Command("go", "list", "-deps", "github.com/go-delve/delve/cmd/dlv")
	delve.Dir = filepath.Join(root, "chapters", "machinery", "support", "delve")
	out, err := delve.CombinedOutput()
	require.NoError(t, err, "%s", out)

	noneLeft := func(t *testing.T) {
		t.Helper()
		assert.Empty(t, docker("ps", "--all", "--format", "{{.Names}}"), "no container left")
		assert.Empty(t, docker("volume", "ls", "--quiet"), "no volume left (Go's caches are this machine's)")
	}
	dial := dialIn(engine.NetNS())

	t.Run("make run", func(t *testing.T) {
		s := startInTerminal(t, root, env, "run", "RUN_IN=docker")
		s.waitFor(t, "Serving until Ctrl-C.", 15*time.Minute)
		t.Logf("make run in Docker served after %s", s.since())
		base := curlPods.FindStringSubmatch(s.output())
		require.NotNil(t, base, "the URL to ask:\n%s", s.output())
		assert.Equal(t, "http://127.0.0.1:10255", base[1], "the port the container publishes")
		client := &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: 10 * time.Second}
		assert.Contains(t, podNames(t, client, base[1]), "web-walkthrough", "/pods through the published port")
		assert.Regexp(t, `(?m)^default\s+web-walkthrough\s+Running\s`, s.output(), "the table of pods")

		require.NoError(t, s.ctrlC(t, time.Minute), "make run after Ctrl-C:\n%s", s.output())
		assert.Contains(t, s.output(), "Stopped the kubelet and removed ")
		stoppedLast(t, "make run", s.output())
		noneLeft(t)
	})

	t.Run("08 in its namespace", func(t *testing.T) {
		kubeconfig := filepath.Join(root, ".bin", "docker", "08-minicluster.kubeconfig")
		s := startInTerminal(t, root, env, "run-08-minicluster", "RUN_IN=docker")
		s.waitFor(t, "Serving until Ctrl-C.", 10*time.Minute)
		assert.Contains(t, s.output(), "network:     a private network namespace")
		assert.Regexp(t, `(?m)^walkthrough\s+Ready\s`, s.output())
		assert.Contains(t, s.output(), "kubectl --kubeconfig "+kubeconfig+" get nodes,pods -A", "kubectl here reads the kubeconfig the chapter prints")
		config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		require.NoError(t, err)
		assert.Equal(t, "https://127.0.0.1:6443", config.Host, "the port the container publishes")
		config.Dial = dial
		client, err := rest.HTTPClientFor(config)
		require.NoError(t, err)
		resp, err := client.Get(config.Host + "/api/v1/nodes/walkthrough")
		require.NoError(t, err, "the apiserver through the published port, with the kubeconfig's credentials")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)

		require.NoError(t, s.ctrlC(t, time.Minute), "after Ctrl-C:\n%s", s.output())
		assert.Contains(t, s.output(), "Stopped the cluster and removed its directory.")
		assert.NoFileExists(t, kubeconfig, "the kubeconfig it made is removed")
		noneLeft(t)
	})

	// The dev container's settings (devcontainer.json) let its user, not root, make chapter 08's
	// private network namespace: a user namespace's, with the one capability Docker's seccomp
	// profile asks for unshare. The program is the one the subtest above built in its container.
	t.Run("the dev container's user, chapter 08's namespace", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(root, ".devcontainer", "devcontainer.json"))
		require.NoError(t, err)
		var dev struct {
			RemoteUser          string
			Init                bool
			CapAdd, SecurityOpt []string
		}
		require.NoError(t, json.Unmarshal(data, &dev))
		require.NotEmpty(t, dev.RemoteUser)
		args := []string{"run", "--rm", "--user", dev.RemoteUser, "--env", "HOME=/tmp"}
		if dev.Init {
			args = append(args, "--init")
		}
		for _, c := range dev.CapAdd {
			args = append(args, "--cap-add", c)
		}
		for _, o := range dev.SecurityOpt {
			args = append(args, "--security-opt", o)
		}
		args = append(args, "--volume", filepath.Join(root, ".bin", "docker", "08-minicluster")+":/walkthrough/08-minicluster:ro",
			"--volume", filepath.Join(root, "examples", "static-pods")+":/walkthrough/static-pods:ro",
			strings.TrimSpace(string(image)), "sh", "-c", "id -u && exec /walkthrough/08-minicluster --once --static-pod-path /walkthrough/static-pods")
		out := docker(args...)
		assert.NotEqual(t, "0", strings.SplitN(out, "\n", 2)[0], "not root")
		assert.Contains(t, out, "network:     a private network namespace")
		assert.Regexp(t, `(?m)^walkthrough\s+Ready\s`, out)
		noneLeft(t)
	})

	t.Run("13 in Delve", func(t *testing.T) {
		s := startInTerminal(t, root, env, "run-13-debugger", "RUN_IN=docker")
		require.NoError(t, s.wait(10*time.Minute), "%s", s.output())
		assert.GreaterOrEqual(t, strings.Count(s.output(), "    stopped at "), 9, "Delve stops at each step of the chain:\n%s", s.output())
		assert.Contains(t, s.output(), " 9. kubelet.(*Kubelet).Run")
		noneLeft(t)
	})

	t.Run("make debug in this terminal", func(t *testing.T) {
		s := startInTerminal(t, root, env, "debug-01-entrypoint", "RUN_IN=docker", "ARGS=--version")
		s.waitFor(t, "(dlv) ", 10*time.Minute)
		s.typeLine(t, "break main.main")
		s.typeLine(t, "continue")
		s.waitFor(t, "] main.main() ./chapters/01-entrypoint/main.go:", time.Minute)
		s.typeLine(t, "exit")
		require.NoError(t, s.wait(time.Minute), "%s", s.output())
		noneLeft(t)
	})
}

// dialIn dials from the network namespace ns (a /proc/PID/ns/net): a socket belongs to the
// namespace of the thread that made it, so a thread of its own enters ns and is never used again
// (a goroutine that ends locked to its thread ends the thread; the engine's keeper, started with
// Pdeathsig, is started from a thread held for it: dockerd.Start).
func dialIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			conn net.Conn
			err  error
		}
		done := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			f, err := os.Open(ns)
			if err != nil {
				done <- result{err: err}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				done <- result{err: fmt.Errorf("enter %s: %w", ns, err)}
				return
			}
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			done <- result{conn, err}
		}()
		r := <-done
		return r.conn, r.err
	}
}

// terminalSession is make run at a terminal of its own, as a reader runs it.
type terminalSession struct {
	cmd     *exec.Cmd
	typist  *os.File
	out     syncbuf.Buffer
	done    chan error
	started time.Time
}

// startInTerminal starts make with args in root, at a terminal of its own.
func startInTerminal(t *testing.T, root string, env []string, args ...string) *terminalSession {
	t.Helper()
	typist, term, err := terminal.Open()
	require.NoError(t, err)
	s := &terminalSession{typist: typist, done: make(chan error, 1), started: time.Now()}
	s.cmd = exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	s.cmd.Dir, s.cmd.Env = root, env
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = term, term, term
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	require.NoError(t, s.cmd.Start())
	term.Close()
	t.Cleanup(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		typist.Close()
	})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := typist.Read(buf)
			s.out.Write(buf[:n])
			if err != nil { // EIO once everything started has closed the terminal
				return
			}
		}
	}()
	go func() { s.done <- s.cmd.Wait() }()
	return s
}

// output is what the terminal showed, with its line ends as a file's.
func (s *terminalSession) output() string { return strings.ReplaceAll(s.out.String(), "\r\n", "\n") }

func (s *terminalSession) since() time.Duration { return time.Since(s.started).Round(time.Second) }

// waitFor waits until the terminal shows what, or fails saying what it showed.
func (s *terminalSession) waitFor(t *testing.T, what string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(s.output(), what) {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("make ended (%v) before it showed %q:\n%s", err, what, s.output())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s:\n%s", what, timeout, s.output())
		}
	}
}

func (s *terminalSession) typeLine(t *testing.T, line string) {
	t.Helper()
	_, err := s.typist.Write([]byte(line + "\n"))
	require.NoError(t, err)
}

// ctrlC presses Ctrl-C and waits for make to end.
func (s *terminalSession) ctrlC(t *testing.T, timeout time.Duration) error {
	t.Helper()
	_, err := s.typist.Write([]byte{3})
	require.NoError(t, err)
	return s.wait(timeout)
}

// wait waits for make to end, and returns how.
func (s *terminalSession) wait(timeout time.Duration) error {
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(timeout):
		return errors.New("did not end within " + timeout.String())
	}
}
