package repocheck

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// TestMakeRun runs the README's first command as a reader runs it: `make run` in the repository's
// root. It waits for the table of pods and the URL to curl, asks that URL for /pods as the README
// says, presses Ctrl-C (SIGINT to the command's process group, as a terminal does), and checks that
// the program said it stopped, exited 0, and left nothing in the temporary directory.
func TestMakeRun(t *testing.T) {
	tier.Require(t, "private network", noNetns) // the kubelet's ports, on a network of the test's own
	tier.Long(t, "make run (a build of the kubelet, minutes when cold)")
	tmp := t.TempDir() // TMPDIR of the run: what it leaves there is visible, and no one else's
	cmd := exec.Command("make", "--no-print-directory", "run")
	cmd.Dir = ".."
	cmd.Env = append(repo.MakeEnv(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	lines := make(chan string, 1024)
	var output strings.Builder
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	curl := regexp.MustCompile(`^\s+curl -s (http://127\.0\.0\.1:\d+)/pods$`)
	var base string
	deadline := time.After(20 * time.Minute) // a cold build of the kubelet's packages
	for base == "" || !strings.Contains(output.String(), "Serving until Ctrl-C.") {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "make run ended before it served:\n%s", output.String())
			output.WriteString(line + "\n")
			if m := curl.FindStringSubmatch(line); m != nil {
				base = m[1]
			}
		case <-deadline:
			t.Fatalf("make run did not serve within 20 minutes:\n%s", output.String())
		}
	}
	assert.Regexp(t, `(?m)^kube-system\s+kube-apiserver-walkthrough\s+Running\s`, output.String(), "the table of pods")

	resp, err := http.Get(base + "/pods")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var pods struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body, &pods))
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Metadata.Name)
	}
	assert.Contains(t, names, "web-walkthrough", "the kubelet serves the README's static pods on /pods")

	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)) // Ctrl-C
	done := make(chan error, 1)
	go func() {
		for line := range lines {
			output.WriteString(line + "\n")
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		// make, given Ctrl-C too, ends by it once its recipe has: the program itself must have
		// stopped cleanly, and said so last (below).
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT) {
			t.Fatalf("make run after Ctrl-C: %v\n%s", err, output.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("make run did not stop within a minute of Ctrl-C:\n%s", output.String())
	}
	stoppedLast(t, "make run", output.String())
	assert.Contains(t, output.String(), "Stopped the kubelet and removed ")

	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names2 []string
	for _, e := range left {
		names2 = append(names2, e.Name())
	}
	slices.Sort(names2)
	assert.Empty(t, names2, "make run left this in its temporary directory %s", filepath.Clean(tmp))
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "the kubelet's port closed with the process")
}
