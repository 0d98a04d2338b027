package lab_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/dockerd"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/labtest"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// The minikube the lab runs is minikube's own build: the module k8s.io/minikube, at the
// version chapters/machinery/lab/minikube/go.mod pins, with its version stamped as minikube's Makefile stamps it.
func TestMinikubeIsTheRealOne(t *testing.T) {
	root, err := labtest.Root()
	require.NoError(t, err)
	binary := labtest.Options(root).Minikube
	if _, err := os.Stat(binary); err != nil {
		tier.Unavailable(t, labtest.Tier, err)
	}
	// Asking minikube its version leaves the reader's home alone (minikube makes ~/.minikube at
	// any command where MINIKUBE_HOME does not point elsewhere).
	home := t.TempDir()
	t.Setenv("HOME", home)
	version, err := labtest.RealMinikube(root, binary)
	require.NoError(t, err)
	assert.Regexp(t, `^v1\.\d+\.\d+$`, version)
	assert.NoDirExists(t, filepath.Join(home, ".minikube"))

	// Anything else is refused: a program that says the same version, but is not minikube's build.
	impostor := filepath.Join(t.TempDir(), "minikube")
	require.NoError(t, os.WriteFile(impostor, []byte("#!/bin/sh\necho "+version+"\n"), 0o755))
	_, err = labtest.RealMinikube(root, impostor)
	assert.Error(t, err)
}

// A lab leaves nothing on this machine, however it ends: stopped after `minikube delete` (the
// workshop's rehearsal, as an attendee: examples/workshop/rehearsal), interrupted with Ctrl-C, or
// when the process that started it is killed. One after the other: side by side with the client's
// node cluster and a third (four starts at once on 2 cores), a start in `lab run` once took more
// than 8 minutes.
func TestLabLeavesNothing(t *testing.T) {
	tier.Require(t, labtest.Tier, labtest.Requirements())
	root, err := labtest.Root()
	require.NoError(t, err)
	version, err := labtest.KubernetesVersion(root)
	require.NoError(t, err)
	labBinary := filepath.Join(t.TempDir(), "lab")
	out, err := exec.Command("go", "build", "-o", labBinary, "github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/cmd/lab").CombinedOutput()
	require.NoError(t, err, "%s", out)
	start := "minikube " + strings.Join(labtest.StartArgs(version), " ")

	// `lab run` (with flags) in a directory of the test's, its command started in a process group
	// of its own (a terminal's foreground job), until minikube's apiserver runs. done receives its end.
	runUntilRunning := func(t *testing.T, flags ...string) (cmd *exec.Cmd, dir string, done <-chan error) {
		t.Helper()
		// A short directory: the engine's socket path must fit a unix socket's 107 bytes, and a
		// test's own temporary directory is named after the test.
		parent, err := os.MkdirTemp("", "kwlab")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(parent) })
		dir = filepath.Join(parent, "lab")
		args := append([]string{"run", "--dir", dir, "--components", filepath.Join(root, ".bin/node"), "--minikube", filepath.Join(root, ".bin/minikube")}, flags...)
		cmd = exec.Command(labBinary, append(args, "--", "bash", "-c", start+" && sleep 600")...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		log, err := os.Create(dir + ".log")
		require.NoError(t, err)
		defer log.Close()
		cmd.Stdout, cmd.Stderr = log, log
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		deadline := time.Now().Add(8 * time.Minute)
		for {
			status, err := exec.Command(filepath.Join(dir, "shell"), "minikube", "status").Output()
			if err == nil && strings.Contains(string(status), "apiserver: Running") {
				return cmd, dir, exited
			}
			select {
			case err := <-exited:
				out, _ := os.ReadFile(dir + ".log")
				t.Fatalf("lab run exited (%v) before minikube's apiserver ran:\n%s", err, out)
			case <-time.After(time.Second):
			}
			require.True(t, time.Now().Before(deadline), "minikube start in `lab run` takes more than 8 minutes")
		}
	}
	waitExit := func(t *testing.T, done <-chan error) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			t.Fatal("lab run did not exit")
		}
	}
	// What a lab of run directory dir left, once its engine is gone.
	leftIn := func(t *testing.T, dir string) []string {
		t.Helper()
		st, err := dockerd.ReadState(filepath.Join(dir, "docker"))
		require.NoError(t, err)
		require.Positive(t, st.KeeperPID, "the engine's state names its keeper (/proc/0 never exists: the wait below would pass on nothing)")
		require.Eventually(t, func() bool {
			_, err := os.Stat("/proc/" + strconv.Itoa(st.KeeperPID))
			return os.IsNotExist(err)
		}, 2*time.Minute, 200*time.Millisecond, "the engine's keeper exits")
		return lab.LeftBehind(dir, st, false)
	}

	// This lab's engine is reached over TCP, and minikube takes Docker Desktop's path (one cluster
	// for both checks: each start is most of this package's time).
	t.Run("Ctrl-C, a remote engine", func(t *testing.T) {
		before := lab.TakeTrace()
		cmd, dir, done := runUntilRunning(t, "--remote-engine")
		dockerDesktopPath(t, filepath.Join(dir, "shell"))
		// Ctrl-C: the terminal sends SIGINT to its foreground process group.
		require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
		waitExit(t, done)
		log, _ := os.ReadFile(dir + ".log")
		assert.Contains(t, string(log), "Stopped the lab in", "lab run stops the lab after Ctrl-C")
		assert.Empty(t, leftIn(t, dir))
		assert.Empty(t, lab.Leftovers(before, lab.TakeTrace()))
	})

	t.Run("the starting process is killed", func(t *testing.T) {
		before := lab.TakeTrace()
		cmd, dir, done := runUntilRunning(t)
		require.NoError(t, cmd.Process.Kill()) // lab run only: its command is in the engine's PID namespace
		waitExit(t, done)
		assert.Empty(t, leftIn(t, dir))
		assert.Empty(t, lab.Leftovers(before, lab.TakeTrace()))
	})
}

// dockerDesktopPath checks, with the lab's shell, the path minikube takes where it cannot reach
// the node's address (Docker Desktop on macOS and Windows, a remote engine): the workshop's
// READMEs tell it and the rehearsal, on the Linux path, cannot see it.
func dockerDesktopPath(t *testing.T, shell string) {
	t.Helper()
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(shell, args...).CombinedOutput()
		require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
		return strings.TrimSpace(string(out))
	}
	// The apiserver's 8443 is published on a port Docker picked, and the kubeconfig names it.
	published := strings.Split(run("docker", "port", "minikube", "8443/tcp"), "\n")[0]
	host, port, err := net.SplitHostPort(published)
	require.NoError(t, err, "docker port: %q", published)
	// On an engine it reaches over TCP, minikube publishes on 0.0.0.0 ("Listening to 0.0.0.0 on
	// external docker host", kic.go); Docker Desktop's own gets 127.0.0.1. Both in the lab's
	// network namespace here.
	assert.Equal(t, "0.0.0.0", host)
	assert.NotEqual(t, "8443", port, "a random port, not the node's own")
	assert.Equal(t, "https://127.0.0.1:"+port, run("kubectl", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"))
	// 127.0.0.1:8443 does not answer; `minikube ip` is still the node's own address.
	assert.Error(t, exec.Command(shell, "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8443").Run(), "127.0.0.1:8443 answers")
	ip := net.ParseIP(run("minikube", "ip"))
	require.NotNil(t, ip, "minikube ip")
	assert.False(t, ip.IsLoopback(), "minikube ip: %s", ip)
	// The workshop's two paths to the kubelet that work everywhere: through the apiserver, and
	// from inside the node (minikube ssh, through the published 22).
	assert.Equal(t, "ok", run("kubectl", "get", "--raw", "/api/v1/nodes/minikube/proxy/healthz"))
	assert.Equal(t, "minikube", run("minikube", "ssh", "--", "hostname"))
}
