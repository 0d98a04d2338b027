package toyremove

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

func pod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid}}
}

func TestRemove(t *testing.T) {
	if os.Getenv("WORKSHOP_EXERCISE") == "" {
		t.Skip("workshop exercise 12: `make check EX=12` runs this test against your code")
	}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := NewPodManager()
	m.Apply(kubetypes.PodUpdate{Op: kubetypes.ADD, Pods: []*v1.Pod{pod("a"), pod("b")}}, t0)

	m.Apply(kubetypes.PodUpdate{Op: kubetypes.REMOVE, Pods: []*v1.Pod{pod("a")}}, t0.Add(time.Second))
	assert.Equal(t, []types.UID{"b"}, uids(m.Pods), "a removed pod is no longer run; the others stay")
	assert.Equal(t, map[types.UID]time.Time{"a": t0.Add(time.Second)}, m.Removed, "the manager remembers when a pod went")

	m.Apply(kubetypes.PodUpdate{Op: kubetypes.REMOVE, Pods: []*v1.Pod{pod("unknown")}}, t0.Add(2*time.Second))
	assert.Equal(t, []types.UID{"b"}, uids(m.Pods))
	assert.Equal(t, []types.UID{"a"}, uids(m.Removed), "removing an unknown pod changes nothing")

	m.Apply(kubetypes.PodUpdate{Op: kubetypes.ADD, Pods: []*v1.Pod{pod("a")}}, t0.Add(3*time.Second))
	assert.Equal(t, []types.UID{"a", "b"}, uids(m.Pods))
	assert.Empty(t, uids(m.Removed), "a pod added again is no longer removed")
}

func uids[V any](m map[types.UID]V) []types.UID {
	out := make([]types.UID, 0, len(m))
	for uid := range m {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}
