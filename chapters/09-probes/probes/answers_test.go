package probes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilexec "k8s.io/utils/exec"
)

// The answers are what the CRI client gives the prober: nothing for exit 0, a CodeExitError for a
// non-zero exit (which the exec prober counts as a failure), another error for a command that
// could not run (which the prober throws away).
func TestAnswers(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alive"), []byte("error\n"), 0o600))
	r := newAnsweringRuntime(nil, dir)
	mark := r.mark()
	for _, tc := range []struct {
		cmd      []string
		exitCode int // -1: not an exit error
		wantErr  bool
	}{
		{[]string{"test", "-e", "/answers/ready"}, 0, false},
		{[]string{"test", "-e", "/answers/started"}, 1, true},
		{[]string{"test", "-e", "/answers/alive"}, -1, true},
		{[]string{"cat", "/answers/ready"}, -1, true},
		{[]string{"test", "-e", "/etc/passwd"}, -1, true},
	} {
		_, _, err := r.ExecSync(context.Background(), "c1", tc.cmd, 0)
		if !tc.wantErr {
			assert.NoError(t, err, "%q", tc.cmd)
			continue
		}
		require.Error(t, err, "%q", tc.cmd)
		var exit utilexec.ExitError
		if tc.exitCode >= 0 {
			require.True(t, errors.As(err, &exit), "%q: %v is an exit error", tc.cmd, err)
			assert.Equal(t, tc.exitCode, exit.ExitStatus())
		} else {
			assert.False(t, errors.As(err, &exit), "%q: %v is not an exit error", tc.cmd, err)
		}
	}
	last, calls := r.since(mark)
	assert.Equal(t, map[string]answer{"ready": passed, "started": failed, "alive": unusable}, last)
	assert.Equal(t, map[string]int{"ready": 1, "started": 1, "alive": 1}, calls)
}
