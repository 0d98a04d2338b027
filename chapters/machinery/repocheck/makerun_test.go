package repocheck

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// TestMakeRun runs the README's first command as a reader runs it: `make run` in the repository's
// root, at a terminal. It waits for the table of pods and the URL to curl, asks that URL for /pods
// as the README says, presses Ctrl-C, and checks that the program said it stopped, and left nothing
// in the temporary directory.
func TestMakeRun(t *testing.T) {
	tier.Require(t, "private network", noNetns) // the kubelet's ports, on a network of the test's own
	tier.Long(t, "make run (a build of the kubelet, minutes when cold)")
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	tmp := t.TempDir() // TMPDIR of the run: what it leaves there is visible, and no one else's
	s := startInTerminal(t, root, append(repo.MakeEnv(), "TMPDIR="+tmp), "run")
	s.waitFor(t, "Serving until Ctrl-C.", 20*time.Minute) // a cold build of the kubelet's packages
	base := curlPods.FindStringSubmatch(s.output())
	require.NotNil(t, base, "the URL to ask:\n%s", s.output())
	assert.Regexp(t, `(?m)^kube-system\s+kube-apiserver-walkthrough\s+Running\s`, s.output(), "the table of pods")
	assert.Contains(t, podNames(t, http.DefaultClient, base[1]), "web-walkthrough", "the kubelet serves the README's static pods on /pods")

	// make, given Ctrl-C too, ends by it once its recipe has: the program itself must have
	// stopped cleanly, and said so last (below).
	err = s.ctrlC(t, time.Minute)
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT) {
		t.Fatalf("make run after Ctrl-C: %v\n%s", err, s.output())
	}
	stoppedLast(t, "make run", s.output())
	assert.Contains(t, s.output(), "Stopped the kubelet and removed ")

	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.Empty(t, names, "make run left this in its temporary directory %s", tmp)
	_, err = http.Get(base[1] + "/healthz")
	assert.Error(t, err, "the kubelet's port closed with the process")
}

// curlPods is the line where a chapter says which URL to curl for its kubelet's pods.
var curlPods = regexp.MustCompile(`(?m)^\s+curl -s (http://127\.0\.0\.1:\d+)/pods$`)

// podNames asks base for /pods and returns the names of the pods it lists.
func podNames(t *testing.T, client *http.Client, base string) []string {
	t.Helper()
	resp, err := client.Get(base + "/pods")
	require.NoError(t, err, "/pods")
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var pods struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body, &pods), "%s", body)
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Metadata.Name)
	}
	return names
}
