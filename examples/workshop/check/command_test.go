package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
