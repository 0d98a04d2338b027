package headless

import (
	"context"
	"errors"
	"testing"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"
	"github.com/stretchr/testify/assert"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		name  string
		state *api.DebuggerState
		want  string
	}{
		{"no answer", nil, "no answer from Delve"},
		{"Delve's error", &api.DebuggerState{Err: errors.New("Process 42 has exited with status 0")}, "Process 42 has exited with status 0"},
		{"exited", &api.DebuggerState{Exited: true, ExitStatus: 2}, "it exited with status 2"},
		{"running", &api.DebuggerState{Running: true}, "it is still running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Describe(tt.state))
		})
	}
}

func TestWhere(t *testing.T) {
	assert.Equal(t, "an unknown place", where(nil))
	assert.Equal(t, "an unknown place", where(&api.Thread{}))
	th := &api.Thread{Function: &api.Function{Name_: "k8s.io/kubernetes/cmd/kubelet/app.run"}, File: "cmd/kubelet/app/server.go", Line: 600}
	assert.Equal(t, "k8s.io/kubernetes/cmd/kubelet/app.run (cmd/kubelet/app/server.go:600)", where(th))
}

// A program that never stops leaves Delve's continue unanswered: the context ends the wait.
func TestDriveEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("Ctrl-C"))
	never := make(chan struct{})
	defer close(never)
	err := (&Session{}).Drive(ctx, func(*rpc2.RPCClient) error { <-never; return nil })
	assert.EqualError(t, err, "stopped waiting for Delve: Ctrl-C")
	assert.NoError(t, (&Session{}).Drive(context.Background(), func(*rpc2.RPCClient) error { return nil }))
}
