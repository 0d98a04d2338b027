package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/workshop/checks"
)

// The flags are checked before the cluster is asked anything (here there is none: a check that
// got that far would say "no cluster").
func TestBadFlags(t *testing.T) {
	nowhere := filepath.Join(t.TempDir(), "answers")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"an upper-case node", []string{"1", "--node", "Minikube"}, `--node "Minikube": a lowercase RFC 1123 subdomain`},
		{"a node with _", []string{"7", "--node", "my_node"}, `--node "my_node": a lowercase RFC 1123 subdomain`},
		{"no answers directory", []string{"1", "--answers", nowhere}, "--answers " + nowhere + ": stat " + nowhere + ": no such file or directory"},
		{"no exercise 0", []string{"0"}, fmt.Sprintf("no exercise 0: they are 1 to %d", len(checks.Exercises))},
		{"no kubeconfig", []string{"1", "--kubeconfig", nowhere}, "--kubeconfig " + nowhere + ": stat " + nowhere + ": no such file or directory"},
		{"no exercise after the last", []string{strconv.Itoa(len(checks.Exercises) + 1)}, fmt.Sprintf("no exercise %d: they are 1 to %d", len(checks.Exercises)+1, len(checks.Exercises))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewCheckCommand(context.Background())
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			empty := filepath.Join(t.TempDir(), "kubeconfig") // a kubeconfig of no cluster
			require.NoError(t, os.WriteFile(empty, nil, 0o600))
			cmd.SetArgs(append([]string{"--kubeconfig", empty}, tt.args...))
			err := cmd.Execute()
			require.Error(t, err)
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// Before the attendee copies the answers' template, the default directory is missing: that is
// the check's to say, with the cp line, not a bad flag.
func TestDefaultAnswersMissing(t *testing.T) {
	o := &checkOptions{answers: filepath.Join(t.TempDir(), "answers")}
	ex := checks.Exercises[0]
	require.NotEmpty(t, ex.Answers)
	assert.NoError(t, o.validate(ex))
	o.answersSet = true
	assert.ErrorContains(t, o.validate(ex), "--answers "+o.answers+": stat ")
}

// Ctrl-C during exercise 16's check (here, while it builds Delve and the kubelet into its
// temporary directory) ends the check, and the directory goes with it.
func TestInterruptLeavesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		tier.Unavailable(t, "Linux", errors.New("exercise 16's check runs on Linux only"))
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Chdir(repo.Root()) // the checker builds from the repository's root
	answers := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(answers, "16-worker-in-delve.yaml"), []byte(
		"goStatement: a\ncreator: b\nchannel: c\nop: d\nsource: e\nhandler: f\n"), 0o644))

	cmd := NewCheckCommand(context.Background())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"16", "--answers", answers})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	building := func() bool {
		dirs, _ := filepath.Glob(filepath.Join(tmp, "exercise-16-*"))
		return len(dirs) > 0
	}
	require.Eventually(t, building, time.Minute, 10*time.Millisecond, "the check makes its directory")
	self, err := os.FindProcess(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, self.Signal(os.Interrupt)) // Ctrl-C
	select {
	case err := <-done:
		require.Error(t, err)
		assert.ErrorContains(t, err, "context canceled")
	case <-time.After(time.Minute):
		t.Fatal("the check went on after Ctrl-C")
	}
	assert.False(t, building(), "the check's directory is gone")
}
