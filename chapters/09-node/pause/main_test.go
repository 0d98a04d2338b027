package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/tier"
)

func TestVersion(t *testing.T) {
	for _, arg := range []string{"-v", "-V"} {
		t.Run(arg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 0, run([]string{arg}, &stdout, &stderr))
			assert.Equal(t, "pause.c HEAD\n", stdout.String())
			assert.Empty(t, stderr.String())
		})
	}
}

// buildPause builds the program as the Makefile does (static, version stamped).
func buildPause(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pause")
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version=3.10.2", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// startPause starts the program and waits for its warning line, printed once its signals are
// handled.
func startPause(t *testing.T, cmd *exec.Cmd) *bufio.Reader {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewReader(stderr)
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Cloneflags&syscall.CLONE_NEWPID == 0 {
		line, err := lines.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "Warning: pause should be the first process\n", line)
	}
	return lines
}

func TestStopsOnSignal(t *testing.T) {
	bin := buildPause(t)
	tests := []struct {
		signal syscall.Signal
		said   string
	}{
		{syscall.SIGTERM, "Shutting down, got signal: Terminated\n"},
		{syscall.SIGINT, "Shutting down, got signal: Interrupt\n"},
	}
	for _, tt := range tests {
		t.Run(tt.signal.String(), func(t *testing.T) {
			cmd := exec.Command(bin)
			stderr := startPause(t, cmd)
			// A SIGCHLD (no child exited) must not stop it.
			require.NoError(t, cmd.Process.Signal(syscall.SIGCHLD))
			require.NoError(t, cmd.Process.Signal(tt.signal))
			line, err := stderr.ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, tt.said, line)
			require.NoError(t, cmd.Wait(), "pause exits with status 0")
		})
	}
}

// inNamespace lists the processes, other than pid, in pid's PID namespace, with their parent
// and state ("S", "Z"…) from /proc/PID/stat.
func inNamespace(pid int) (map[int][2]string, error) {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return nil, err
	}
	links, _ := filepath.Glob("/proc/[0-9]*/ns/pid")
	procs := map[int][2]string{}
	for _, l := range links {
		other, err := strconv.Atoi(strings.Split(l, "/")[2])
		if err != nil || other == pid {
			continue
		}
		if link, err := os.Readlink(l); err != nil || link != ns {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", other))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …
		_, rest, _ := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		if len(f) >= 2 {
			procs[other] = [2]string{f[1], f[0]}
		}
	}
	return procs, nil
}

// TestReapsOrphans runs pause as PID 1 of a new PID namespace, as in a pod that shares one,
// and orphans a process inside it: the orphan becomes pause's child, and once it exits pause
// must collect it (a zombie would stay in its list of children).
func TestReapsOrphans(t *testing.T) {
	if os.Geteuid() != 0 {
		tier.Unavailable(t, "node", errors.New("a PID namespace needs root"))
	}
	nsenter, err := exec.LookPath("nsenter")
	tier.Require(t, "node", err)

	cmd := exec.Command(buildPause(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	startPause(t, cmd)
	pid := cmd.Process.Pid

	// nsenter forks sh into the namespace; sh starts sleep and exits, and the kernel hands the
	// orphaned sleep to the namespace's init: pause. (The sleep must not hold the output pipe,
	// or collecting sh's output would wait for the sleep to end.)
	out, err := exec.Command(nsenter, "--pid=/proc/"+strconv.Itoa(pid)+"/ns/pid", "--", "sh", "-c", "sleep 2 >/dev/null 2>&1 & exit 0").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var orphan int
	require.Eventually(t, func() bool {
		procs, err := inNamespace(pid)
		for p, st := range procs {
			if st[0] == strconv.Itoa(pid) {
				orphan = p
			}
		}
		return err == nil && orphan != 0
	}, 5*time.Second, 10*time.Millisecond, "the orphaned sleep became pause's child")

	// Once it exits, pause must collect it: a zombie would keep its /proc entry, in state Z.
	require.Eventually(t, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", orphan))
		return errors.Is(err, os.ErrNotExist)
	}, 10*time.Second, 50*time.Millisecond, "pause reaped the sleep once it exited (no zombie left)")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
}
