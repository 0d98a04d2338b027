package pressure

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
	kubelettypes "k8s.io/kubernetes/pkg/kubelet/types"
	testingclock "k8s.io/utils/clock/testing"
)

// TestRankIsTheKubelets holds Rank to the kubelet's own eviction manager on pods it has not
// seen: random sets of BestEffort, Burstable and Guaranteed pods, of several priorities, static
// ones among them, some without statistics, with usages under, at and over their requests. The
// real manager (eviction.NewManager, started as the kubelet starts it) evicts one pod per round
// while memory.available stays below its threshold; the order it evicts in must be Rank's, up to
// the order of pods Rank cannot tell apart (the kubelet's sort is not stable), and the critical
// pods it must never evict.
func TestRankIsTheKubelets(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 43))
	for n := range 60 {
		pods, usage := randomPods(rng, n)
		t.Run(fmt.Sprintf("set%02d-%dpods", n, len(pods)), func(t *testing.T) {
			evicted := evictionOrder(t, pods, usage)
			ranked := Rank(pods, func(p *corev1.Pod) (resource.Quantity, bool) {
				q, ok := usage[p.UID]
				return q, ok
			})
			var want []Ranked
			for _, r := range ranked {
				if !r.Critical {
					want = append(want, r)
				}
			}
			require.Len(t, evicted, len(want), "the kubelet evicts every pod but the critical ones, one per round")
			// Group Rank's order into runs of pods it cannot tell apart; the kubelet's order must
			// go through the same runs, in the same order.
			group := map[types.UID]int{}
			g := 0
			for i, r := range want {
				if i > 0 && compare(want[i-1], r) != 0 {
					g++
				}
				group[r.Pod.UID] = g
			}
			var wantGroups, gotGroups []int
			for i, r := range want {
				wantGroups = append(wantGroups, group[r.Pod.UID])
				gotGroups = append(gotGroups, group[evicted[i]])
			}
			assert.Equal(t, wantGroups, gotGroups, "the kubelet's order of eviction (by Rank's groups of equals)\n%s", describe(ranked))
		})
	}
}

// randomPods makes a set of pods and what each uses (no entry: no statistics).
func randomPods(rng *rand.Rand, n int) ([]*corev1.Pod, map[types.UID]resource.Quantity) {
	count := 2 + rng.IntN(7)
	usage := map[types.UID]resource.Quantity{}
	var pods []*corev1.Pod
	mi := func(v int) resource.Quantity { return *resource.NewQuantity(int64(v)<<20, resource.BinarySI) }
	for i := range count {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%d", i),
			UID: types.UID(fmt.Sprintf("uid-%d-%d", n, i))}}
		c := corev1.Container{Name: "app", Image: "pause"}
		request := 0
		switch rng.IntN(3) {
		case 0: // BestEffort
		case 1: // Burstable
			request = 50 * (1 + rng.IntN(6))
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: mi(request)}
			if rng.IntN(2) == 0 {
				c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: mi(request * 2)}
			}
		case 2: // Guaranteed
			request = 50 * (1 + rng.IntN(6))
			both := corev1.ResourceList{corev1.ResourceMemory: mi(request), corev1.ResourceCPU: resource.MustParse("100m")}
			c.Resources.Requests, c.Resources.Limits = both, both.DeepCopy()
		}
		p.Spec.Containers = []corev1.Container{c}
		switch rng.IntN(4) {
		case 0:
			p.Spec.Priority = ptrTo(int32(1000))
		case 1:
			p.Spec.Priority = ptrTo(int32(0))
		case 2:
			if rng.IntN(3) == 0 {
				p.Spec.Priority = ptrTo(int32(2000000000)) // system-cluster-critical: never evicted
			}
		}
		if rng.IntN(6) == 0 {
			p.Annotations = map[string]string{kubelettypes.ConfigSourceAnnotationKey: kubelettypes.FileSource} // a static pod
		}
		switch rng.IntN(8) {
		case 0: // no statistics: no running container
		case 1:
			usage[p.UID] = mi(request) // at its request
		default:
			usage[p.UID] = mi(rng.IntN(8) * 40)
		}
		pods = append(pods, p)
	}
	return pods, usage
}

func ptrTo[T any](v T) *T { return &v }

// evictionOrder runs the kubelet's eviction manager on pods whose statistics keep
// memory.available below the threshold, and returns the pods it kills, in order.
func evictionOrder(t *testing.T, pods []*corev1.Pod, usage map[types.UID]resource.Quantity) []types.UID {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	var mu sync.Mutex
	active := slices.Clone(pods)
	var killed []types.UID
	kill := func(pod *corev1.Pod, _ bool, _ *int64, _ func(*corev1.PodStatus)) error {
		mu.Lock()
		defer mu.Unlock()
		killed = append(killed, pod.UID)
		active = slices.DeleteFunc(active, func(p *corev1.Pod) bool { return p.UID == pod.UID })
		return nil
	}
	activePods := func() []*corev1.Pod {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(active)
	}
	clock := testingclock.NewFakeClock(time.Now())
	threshold := evictionapi.Threshold{Signal: evictionapi.SignalMemoryAvailable, Operator: evictionapi.OpLessThan,
		Value: evictionapi.ThresholdValue{Quantity: resource.NewQuantity(200<<20, resource.BinarySI)}}
	m, _ := eviction.NewManager(summary{pods: pods, usage: usage}, eviction.Config{PressureTransitionPeriod: time.Minute,
		Thresholds: []evictionapi.Threshold{threshold}}, kill, noGC{}, noGC{}, &record.FakeRecorder{},
		&corev1.ObjectReference{Kind: "Node", Name: "walkthrough"}, clock, false)
	m.Start(ctx, diskInfo{}, activePods, func(*corev1.Pod) bool { return true }, time.Millisecond)
	want := 0
	for _, p := range pods {
		if !kubelettypes.IsStaticPod(p) && (p.Spec.Priority == nil || *p.Spec.Priority < 2000000000) {
			want++
		}
	}
	// After each eviction the manager waits for the pod's cleanup on its clock's one-second ticker.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		done := len(killed) == want
		mu.Unlock()
		if done {
			break
		}
		if clock.HasWaiters() {
			clock.Step(time.Second)
		}
		time.Sleep(100 * time.Microsecond)
	}
	// A round more, to see that the critical pods left are not evicted.
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(killed)
}

// summary is the node's statistics as the eviction manager reads them: 100Mi available, always,
// and each pod's working set (none for a pod without statistics).
type summary struct {
	pods  []*corev1.Pod
	usage map[types.UID]resource.Quantity
}

func (s summary) Get(context.Context, bool) (*statsapi.Summary, error) {
	available, workingSet := uint64(100<<20), uint64(4<<30)
	out := &statsapi.Summary{Node: statsapi.NodeStats{Memory: &statsapi.MemoryStats{AvailableBytes: &available, WorkingSetBytes: &workingSet}}}
	for _, p := range s.pods {
		q, ok := s.usage[p.UID]
		if !ok {
			continue
		}
		ws := uint64(q.Value())
		out.Pods = append(out.Pods, statsapi.PodStats{PodRef: statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
			Memory: &statsapi.MemoryStats{WorkingSetBytes: &ws}})
	}
	return out, nil
}

func (s summary) GetCPUAndMemoryStats(ctx context.Context) (*statsapi.Summary, error) {
	return s.Get(ctx, false)
}

// noGC reclaims nothing: memory has no node-level reclaim, but the manager takes both.
type noGC struct{}

func (noGC) DeleteUnusedImages(context.Context) error        { return nil }
func (noGC) DeleteAllUnusedContainers(context.Context) error { return nil }

type diskInfo struct{}

func (diskInfo) HasDedicatedImageFs(context.Context) (bool, error)     { return false, nil }
func (diskInfo) HasDedicatedContainerFs(context.Context) (bool, error) { return false, nil }

// describe prints a ranking for a failure message.
func describe(ranked []Ranked) string {
	var s string
	for _, r := range ranked {
		s += fmt.Sprintf("  %s %s measured=%t usage=%s request=%s exceeds=%t priority=%d critical=%t\n",
			r.Pod.Name, r.QoS, r.Measured, r.Usage.String(), r.Request.String(), r.Exceeds, r.Priority, r.Critical)
	}
	return s
}
