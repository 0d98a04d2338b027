package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// TestReadmesScript runs make test-readmes' script (.ci/readmes) in a directory of its own, with
// a go command that only notes its arguments and hosts that run their command as it is: its exit
// status is each leg's (a run whose legs all passed once ended 2, on its own way out), and a leg
// that fails is named.
func TestReadmesScript(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"readmes", "clean-tmp"} {
		script, err := os.ReadFile(repo.Path(".ci", name))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, ".ci"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".ci", name), script, 0o755))
	}
	// The other hosts, as this one; go notes each leg's -run and fails where FAIL_RUN says.
	files := map[string]string{
		".ci/cgroup-v1":   "#!/bin/sh\nexec \"$@\"\n",
		".ci/cgroup-v2":   "#!/bin/sh\nexec \"$@\"\n",
		".ci/with-docker": "#!/bin/sh\nexec \"$@\"\n",
		"go": "#!/usr/bin/env bash\nfor a; do if [ \"$prev\" = -run ]; then echo \"ran $a\"; " +
			"[ -n \"${FAIL_RUN:-}\" ] && [[ $a == *\"$FAIL_RUN\"* ]] && { echo \"FAIL $a\"; exit 1; }; fi; prev=$a; done; exit 0\n",
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755))
	}
	readmes := func(failRun string) (string, error) {
		cmd := exec.Command("./.ci/readmes")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GO="+filepath.Join(dir, "go"), "TEST_FLAGS=", "FAIL_RUN="+failRun, "CI=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	legs := 2 // this host's two (chapters 09 and 12; chapter 10); root simulates the other two hosts
	if os.Geteuid() == 0 {
		legs = 4
	}

	for _, tt := range []struct {
		name    string
		failRun string // the -run of the leg that fails
		ok      bool
		failed  string // the leg named as failed
	}{
		{name: "every leg passes", ok: true},
		{name: "the waiting leg fails", failRun: "12-node|09-probes)", failed: "chapters 09 and 12, as this host"},
		{name: "chapter 10's leg fails", failRun: "/^10-pressure$", failed: "chapter 10, as this host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := readmes(tt.failRun)
			if tt.ok {
				require.NoError(t, err, "%s", out)
				assert.NotContains(t, out, "FAILED")
			} else {
				require.Error(t, err, "%s", out)
				assert.Contains(t, out, "==> the READMEs "+tt.failed+": FAILED")
			}
			assert.Equal(t, legs, strings.Count(out, "==> the READMEs "), "each leg reported once:\n%s", out)
			assert.Contains(t, out, "ran ^TestChapterREADMEs$", "this host's other READMEs ran")
		})
	}
}
