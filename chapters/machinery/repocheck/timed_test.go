package repocheck

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// TestTimed: make test's stopwatch passes a stage's exit status on, notes each stage whether it
// passed or not, with its wall and CPU time, and its summary lists them with the total.
func TestTimed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "times")
	timed := func(args ...string) (string, error) {
		out, err := exec.Command(repo.Path(".ci", "timed"), append([]string{dir}, args...)...).CombinedOutput()
		return string(out), err
	}
	_, err := timed("begin")
	require.NoError(t, err)
	out, err := timed("run", "passes", "sh", "-c", "echo it says so")
	require.NoError(t, err, "%s", out)
	assert.Contains(t, out, "==> passes\nit says so\n")
	out, err = timed("run", "fails", "sh", "-c", "exit 3")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 3, exit.ExitCode())

	// Two seconds of a busy shell: its CPU time is counted (bash's times in the script's own shell).
	out, err = timed("run", "busy", "sh", "-c", `end=$(($(date +%s) + 2)); while [ "$(date +%s)" -lt "$end" ]; do :; done`)
	require.NoError(t, err, "%s", out)

	out, err = timed("summary")
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `(?m)^  passes +ok +0m0\ds  CPU 0m0\ds$`, out)
	assert.Regexp(t, `(?m)^  fails +FAILED +0m0\ds  CPU 0m0\ds$`, out)
	assert.Regexp(t, `(?m)^  busy +ok +0m0[2-4]s  CPU 0m0[1-4]s$`, out)
	assert.Regexp(t, `(?m)^  total +0m0\ds$`, out)
}
