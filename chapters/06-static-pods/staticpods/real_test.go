package staticpods

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"
	_ "unsafe" // go:linkname

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/kubelet/config"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// The kubelet's decoding is unexported. To run it on thousands of inputs (the fuzz test, the
// corpus), the tests reach it by name; everything else goes through the exported file source.

//go:linkname realTryDecodeSinglePod k8s.io/kubernetes/pkg/kubelet/config.tryDecodeSinglePod
func realTryDecodeSinglePod(logger klog.Logger, data []byte, defaultFn func(klog.Logger, *api.Pod) error) (parsed bool, pod *v1.Pod, err error)

//go:linkname realApplyDefaults k8s.io/kubernetes/pkg/kubelet/config.applyDefaults
func realApplyDefaults(logger klog.Logger, pod *api.Pod, source string, isFile bool, nodeName types.NodeName) error

// realDecode is what the kubelet's extractFromFile does with a file's bytes.
func realDecode(data []byte, source string, nodeName types.NodeName) (*v1.Pod, error) {
	_, pod, err := realTryDecodeSinglePod(klog.Background(), data, func(logger klog.Logger, pod *api.Pod) error {
		return realApplyDefaults(logger, pod, source, true, nodeName)
	})
	if err != nil {
		return nil, err
	}
	return pod, nil
}

// recorder runs the kubelet's own file source and PodConfig on a path and records every
// update they send. The real source cannot be stopped (it has no context): each one gets a
// path of its own and lives until the test binary exits.
type recorder struct {
	mu      sync.Mutex
	updates []kubetypes.PodUpdate
}

func startReal(t *testing.T, path string, nodeName types.NodeName, period time.Duration) *recorder {
	t.Helper()
	cfg := config.NewPodConfig(record.NewFakeRecorder(1000), nil)
	config.NewSourceFile(klog.Background(), path, nodeName, period, cfg.Channel(context.Background(), kubetypes.FileSource))
	r := &recorder{}
	go r.record(cfg.Updates())
	return r
}

// startToy runs the toy's PodConfig the same way, until the test ends.
func startToy(t *testing.T, path string, nodeName types.NodeName, period time.Duration) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := NewPodConfig(path, nodeName, period)
	done := make(chan struct{})
	go func() { cfg.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r := &recorder{}
	go r.record(cfg.Updates())
	return r
}

func (r *recorder) record(updates <-chan kubetypes.PodUpdate) {
	for u := range updates {
		r.mu.Lock()
		r.updates = append(r.updates, u)
		r.mu.Unlock()
	}
}

// since returns the updates recorded from index i on, and the index to continue from.
func (r *recorder) since(i int) ([]kubetypes.PodUpdate, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kubetypes.PodUpdate(nil), r.updates[i:]...), len(r.updates)
}

// waitOps waits until the updates recorded from index i on hold at least n operations, as
// flatten counts them, and returns them; after patience it fails, naming what did come.
func (r *recorder) waitOps(t *testing.T, i, n int, patience time.Duration, who string, args ...any) []kubetypes.PodUpdate {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		updates, _ := r.since(i)
		got := flatten(updates)
		if len(got) >= n {
			return updates
		}
		if time.Now().After(deadline) {
			require.FailNowf(t, "too few operations", who+" sent %d operations of the %d expected within %s: %v", append(args, len(got), n, patience, got)...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// firstUpdate waits for the first update.
func (r *recorder) firstUpdate(t *testing.T) kubetypes.PodUpdate {
	t.Helper()
	require.Eventually(t, func() bool { u, _ := r.since(0); return len(u) > 0 }, 30*time.Second, 5*time.Millisecond)
	u, _ := r.since(0)
	return u[0]
}

// comparable strips what legitimately differs between two runs — the first-seen timestamp —
// and sorts pods by namespace/name.
func comparable(pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		p = p.DeepCopy()
		delete(p.Annotations, kubetypes.ConfigFirstSeenAnnotationKey)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name+"/"+string(out[i].UID) < out[j].Namespace+"/"+out[j].Name+"/"+string(out[j].UID)
	})
	return out
}
