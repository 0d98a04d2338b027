package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// TestStages runs make test's stage runner (.ci/stages) on a Makefile of its own: stages in turn,
// A+B,C (B then C beside A, under nice 10), a failing stage that stops the rest, and the summary
// of each. The lab it notes the machine's state with is a stand-in that says yes.
func TestStages(t *testing.T) {
	dir := t.TempDir()
	script, err := os.ReadFile(repo.Path(".ci", "stages"))
	require.NoError(t, err)
	files := map[string]string{
		".ci/stages":                             string(script),
		"go.mod":                                 "module example.com/stages\n\ngo 1.26\n",
		"chapters/machinery/lab/cmd/lab/main.go": "package main\n\nfunc main() {}\n",
		// Each target prints its nice value; slow ends last.
		"Makefile": "first: ; @echo first nice $$(nice)\n" +
			"beside: ; @echo beside nice $$(nice)\n" +
			"then: ; @echo then nice $$(nice)\n" +
			"slow: ; @sleep 2; echo slow ended\n" +
			"last: ; @echo last ran\n" +
			"broken: ; @echo broken says why; exit 3\n" +
			// waits-for-d ends well only if own-branch runs meanwhile; second only after first ended.
			"waits-for-d: ; @for i in $$(seq 100); do [ -e d.ran ] && exit 0; sleep 0.1; done; echo d did not run meanwhile; exit 1\n" +
			"own-branch: ; @touch d.ran\n" +
			"first-in-turn: ; @touch first.on; sleep 1; rm first.on; touch first.done\n" +
			"second-in-turn: ; @test -e first.done && test ! -e first.on && echo second after first\n",
	}
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755))
	}
	stagesIn := func(env []string, targets ...string) (string, error) {
		cmd := exec.Command("./.ci/stages", targets...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	stages := func(targets ...string) (string, error) { return stagesIn(nil, targets...) }
	niceOf := func(t *testing.T, out, target string) int {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + target + ` nice (\d+)$`).FindStringSubmatch(out)
		require.NotNil(t, m, "%s printed its nice value:\n%s", target, out)
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		return n
	}

	t.Run("one beside another, then one after", func(t *testing.T) {
		out, err := stages("first", "slow+beside,then", "last")
		require.NoError(t, err, "%s", out)
		want := min(19, niceOf(t, out, "first")+10)
		assert.Equal(t, want, niceOf(t, out, "beside"), "beside the first of a group: under nice 10")
		assert.Equal(t, want, niceOf(t, out, "then"))
		assert.Regexp(t, `(?s)==> make slow\n.*slow ended.*==> make beside\n.*==> make then\n.*==> make last\n.*last ran`, out,
			"each one's output whole, in order, and the next stage after the group")
		for _, line := range []string{
			`(?m)^  slow\+beside,then +ok +0m0\ds`, `(?m)^    slow +ok +0m0\ds$`, `(?m)^    beside +ok +0m0\ds$`,
			`(?m)^    then +ok +0m0\ds$`, `(?m)^  last +ok +0m0\ds`, `(?m)^  total +0m\d\ds`,
		} {
			assert.Regexp(t, line, out, "the summary")
		}
	})

	t.Run("A+B,C+D: D on a branch of its own, beside B then C", func(t *testing.T) {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, "d.ran")))
		out, err := stages("slow+beside,waits-for-d+own-branch")
		require.NoError(t, err, "%s", out)
		assert.Regexp(t, `(?m)^    own-branch +ok`, out)
		assert.Regexp(t, `(?m)^    waits-for-d +ok`, out)
	})

	t.Run("A~B on a new machine: one after the other", func(t *testing.T) {
		// An empty build cache is a new machine's (under 1 GiB).
		out, err := stagesIn([]string{"GOCACHE=" + t.TempDir()}, "first-in-turn~second-in-turn")
		require.NoError(t, err, "%s", out)
		assert.Contains(t, out, "this run is cold")
		assert.Contains(t, out, "second after first")
		assert.Regexp(t, `(?m)^  first-in-turn~second-in-turn +ok`, out)
	})

	t.Run("a failing stage stops the rest", func(t *testing.T) {
		out, err := stages("broken+beside", "last")
		require.Error(t, err)
		assert.Contains(t, out, "broken says why")
		assert.Regexp(t, `(?m)^  broken\+beside +FAILED`, out)
		assert.Regexp(t, `(?m)^    broken +FAILED`, out)
		assert.NotContains(t, out, "last ran")
	})
}
