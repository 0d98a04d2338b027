package pressure

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	v1resource "k8s.io/kubernetes/pkg/api/v1/resource"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	kubelettypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// Ranked is one pod in the order the eviction manager takes pods under memory pressure, with
// what decides its place.
type Ranked struct {
	Pod *corev1.Pod
	// QoS is the pod's QoS class: shown, never sorted by.
	QoS corev1.PodQOSClass
	// Measured says whether the node's statistics have the pod (a pod with no running
	// container has none); Usage is its working set when they do.
	Measured bool
	Usage    resource.Quantity
	// Request is the pod's memory request as the kubelet sums it (v1resource.GetResourceRequestQuantity).
	Request resource.Quantity
	// Exceeds says whether Usage is more than Request: the first key.
	Exceeds bool
	// Priority is the pod's spec.priority (0 when unset): the second key, lowest first.
	Priority int32
	// Above is Usage less Request: the third key, largest first.
	Above resource.Quantity
	// Critical pods are ranked like the others but never evicted: static and mirror pods, and
	// pods of a system-critical priority (kubelettypes.IsCriticalPod).
	Critical bool
}

// Rank orders pods as the kubelet's rankMemoryPressure does
// (pkg/kubelet/eviction/helpers.go#L819-L821 (func rankMemoryPressure)):
// orderedBy(exceedMemoryRequests(stats), priority, memory(stats)). A pod without statistics
// comes first under the first and the last key (cmpBool(!p1Found, !p2Found)). The QoS class is
// no key: a BestEffort pod requests nothing, so any use exceeds its request, and a Guaranteed
// pod using exactly its request does not exceed it. The kubelet's sort is not stable: pods equal
// in all three keys may come in any order; here they keep the order they came in.
// TestRankIsTheKubelets holds this to the real eviction manager.
func Rank(pods []*corev1.Pod, usage func(*corev1.Pod) (resource.Quantity, bool)) []Ranked {
	out := make([]Ranked, 0, len(pods))
	for _, p := range pods {
		r := Ranked{Pod: p, QoS: v1qos.GetPodQOS(p), Priority: corev1helpers.PodPriority(p), Critical: kubelettypes.IsCriticalPod(p)}
		r.Request = v1resource.GetResourceRequestQuantity(p, corev1.ResourceMemory)
		r.Usage, r.Measured = usage(p)
		r.Exceeds = r.Measured && r.Usage.Cmp(r.Request) > 0
		r.Above = r.Usage.DeepCopy()
		r.Above.Sub(r.Request)
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return compare(out[i], out[j]) < 0 })
	return out
}

// compare is -1 when a goes before b, 1 when after, 0 when the kubelet's keys cannot tell.
func compare(a, b Ranked) int {
	// exceedMemoryRequests: the pod without statistics first, else the one over its request.
	if c := boolFirst(!a.Measured, !b.Measured); c != 0 {
		return c
	}
	if c := boolFirst(a.Exceeds, b.Exceeds); c != 0 {
		return c
	}
	// priority: the lower first.
	switch {
	case a.Priority < b.Priority:
		return -1
	case a.Priority > b.Priority:
		return 1
	}
	// memory: the larger use above the request first (two pods without statistics are equal).
	if !a.Measured {
		return 0
	}
	return b.Above.Cmp(a.Above)
}

// boolFirst puts true before false.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
