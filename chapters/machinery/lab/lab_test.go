package lab_test

import (
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

// A lab leaves nothing on this machine, however it ends: stopped after `minikube delete`
// (TestLabAsAttendee, as an attendee), interrupted with Ctrl-C, or when the process that started
// it is killed. One after the other: side by side with the attendee's and the client's node
// cluster (four starts at once on 2 cores), a start in `lab run` once took more than 8 minutes.
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

	// `lab run` in a directory of the test's, its command started in a process group of its own
	// (a terminal's foreground job), until minikube's apiserver runs. done receives its end.
	runUntilRunning := func(t *testing.T) (cmd *exec.Cmd, dir string, done <-chan error) {
		t.Helper()
		// A short directory: the engine's socket path must fit a unix socket's 107 bytes, and a
		// test's own temporary directory is named after the test.
		parent, err := os.MkdirTemp("", "kwlab")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(parent) })
		dir = filepath.Join(parent, "lab")
		cmd = exec.Command(labBinary, "run", "--dir", dir, "--components", filepath.Join(root, ".bin/node"), "--minikube", filepath.Join(root, ".bin/minikube"),
			"--", "bash", "-c", start+" && sleep 600")
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

	t.Run("Ctrl-C", func(t *testing.T) {
		before := lab.TakeTrace()
		cmd, dir, done := runUntilRunning(t)
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
