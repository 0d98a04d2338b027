package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanTmp: .ci/clean-tmp fails a command that leaves anything in its temporary directory,
// says what, and removes it; a command that leaves nothing passes with its own exit status.
func TestCleanTmp(t *testing.T) {
	tmp := t.TempDir()
	tests := []struct {
		name, script string
		fails        bool
		says         string
	}{
		{"leaves nothing", "mktemp -d >/dev/null && rm -rf \"$TMPDIR\"/tmp.*", false, ""},
		{"leaves a directory", "mktemp -d >/dev/null", true, "left this in its temporary directory"},
		{"fails by itself", "exit 3", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("../.ci/clean-tmp", "bash", "-c", tt.script)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			out, err := cmd.CombinedOutput()
			if tt.fails {
				assert.Error(t, err, "%s", out)
			} else {
				assert.NoError(t, err, "%s", out)
			}
			assert.Contains(t, string(out), tt.says)
			left, err := os.ReadDir(tmp)
			require.NoError(t, err)
			assert.Empty(t, left, "clean-tmp removes its directory")
		})
	}
}

// TestPrivateDir: make debug-%'s socket directory (.ci/private-dir) is made for its user alone,
// and one that another user can open is refused, saying why.
func TestPrivateDir(t *testing.T) {
	tests := []struct {
		name string
		mode os.FileMode // 0: the directory does not exist yet
		fail bool
	}{
		{"missing: made for its user", 0, false},
		{"its user's alone", 0o700, false},
		{"the group can open it", 0o750, true},
		{"anyone can list it", 0o704, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sockets")
			if tt.mode != 0 {
				require.NoError(t, os.Mkdir(dir, 0o700))
				require.NoError(t, os.Chmod(dir, tt.mode))
			}
			out, err := exec.Command("../.ci/private-dir", dir).CombinedOutput()
			if tt.fail {
				assert.Error(t, err)
				assert.Contains(t, string(out), "error: "+dir+": other users can open it")
				return
			}
			assert.NoError(t, err, "%s", out)
			info, err := os.Stat(dir)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
		})
	}
}

// TestAsRoot: .ci/as-root runs its command as root; for another user it says what needs root, and
// fails under CI=true (a tier CI promises) or skips elsewhere. As root, the other user is nobody.
func TestAsRoot(t *testing.T) {
	script, err := filepath.Abs("../.ci/as-root")
	require.NoError(t, err)
	run := func(asNobody bool, env ...string) (string, error) {
		cmd := exec.Command(script, "the lab", "echo", "ran")
		if asNobody { // the script on standard input: nobody may not reach the checkout or TMPDIR
			data, err := os.ReadFile(script)
			require.NoError(t, err)
			cmd = exec.Command("su", "-s", "/bin/bash", "nobody", "-c", "bash -s -- 'the lab' echo ran")
			cmd.Stdin, cmd.Dir = strings.NewReader(string(data)), "/"
		}
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	root := os.Geteuid() == 0
	if root {
		out, err := run(false, "CI=true")
		require.NoError(t, err, "%s", out)
		assert.Equal(t, "ran\n", out)
	}
	out, err := run(root, "CI=")
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "Skipped: the lab needs root — sudo -E make test runs it.\n", out)
	out, err = run(root, "CI=true")
	require.Error(t, err)
	assert.Equal(t, "CI=true: the lab needs root\n", out)
}
