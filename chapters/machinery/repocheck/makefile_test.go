package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakefileGoTests: every `go test` of the Makefile says how long it may take (a cold build on
// 2 cores outlasts go test's default 10 minutes, and a hung test must still end), and those that
// run whole packages' tests shuffle them, so that no test depends on another having run first.
func TestMakefileGoTests(t *testing.T) {
	data, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	goTest := regexp.MustCompile(`(?m)^\t.*\$\(GO\) test .*$`)
	lines := goTest.FindAllString(string(data), -1)
	require.NotEmpty(t, lines, "the Makefile's go test commands")
	whole := 0
	for _, line := range lines {
		if strings.Contains(line, "echo ") {
			continue // what a target prints it will run, not a run
		}
		assert.Contains(t, line, " -timeout $(TIMEOUT) ", "%s", strings.TrimSpace(line))
		// make test's stages run in a temporary directory of their own, which must stay empty.
		if (strings.Contains(line, "-shuffle=on") && !strings.Contains(line, "./chapters/$*/")) ||
			(strings.Contains(line, "TestChapterREADMEs") && !strings.Contains(line, "-update")) || strings.Contains(line, "TestRehearseWorkshop") {
			assert.Contains(t, line, ".ci/clean-tmp ", "%s", strings.TrimSpace(line))
		}
		// A command that picks its tests (-run) runs a few named ones; one that does not, runs all.
		if !strings.Contains(line, " -run ") {
			whole++
			assert.Contains(t, line, " -shuffle=on ", "%s", strings.TrimSpace(line))
		}
	}
	assert.GreaterOrEqual(t, whole, 3, "test-unit, test-race and test-<chapter> run whole packages")

	// The README runs are a script's (.ci/readmes): its one go test command has a timeout and runs
	// in a temporary directory of its own.
	readmes, err := os.ReadFile("../.ci/readmes")
	require.NoError(t, err)
	run := regexp.MustCompile(`(?m)^\s*\.ci/clean-tmp .*"\$GO" test -timeout "\$TIMEOUT" .*$`).FindAllString(string(readmes), -1)
	assert.Len(t, run, 1, ".ci/readmes runs go test through .ci/clean-tmp with -timeout, in one place")
	assert.Equal(t, 1, strings.Count(string(readmes), `"$GO" test`), ".ci/readmes has one go test command")
}

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
