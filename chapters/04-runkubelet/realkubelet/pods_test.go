package realkubelet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestAllRunning(t *testing.T) {
	pod := func(phase v1.PodPhase) v1.Pod { return v1.Pod{Status: v1.PodStatus{Phase: phase}} }
	tests := []struct {
		name string
		pods []v1.Pod
		want bool
	}{
		{"no pod yet", nil, false},
		{"all running", []v1.Pod{pod(v1.PodRunning), pod(v1.PodRunning)}, true},
		{"one pending", []v1.Pod{pod(v1.PodRunning), pod(v1.PodPending)}, false},
		{"one that ended", []v1.Pod{pod(v1.PodSucceeded)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AllRunning(tt.pods))
		})
	}
}
