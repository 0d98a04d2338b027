package staticpods

import (
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// Merger turns successive full sets of pods from one source into the updates the kubelet's
// sync loop consumes, as the real PodConfig's storage does
// (pkg/kubelet/config/config.go#L146-L179 (func (s *podStorage) Merge)):
//
//   - a UID not seen before is an ADD, stamped with the time it was first seen;
//   - a UID gone from the set is a REMOVE;
//   - a UID seen again whose spec, labels, deletion fields or non-local annotations changed is an
//     UPDATE — or a DELETE when it now has a deletionTimestamp;
//   - a UID seen again with only a different status is a RECONCILE.
//
// Because a file pod's UID hashes its content, an edited manifest is a REMOVE of the old UID and
// an ADD of the new one; UPDATE, DELETE and RECONCILE need a manifest that sets metadata.uid.
//
// The updates of one Merge come in the kubelet's order: REMOVE, ADD, UPDATE, DELETE, then —
// for the very first set only, if it added nothing — an empty ADD that tells the sync loop the
// source is ready, then RECONCILE. Each carries copies, never the pods the Merger keeps.
type Merger struct {
	// Source names the source in each update and in the config.source annotation.
	Source string
	pods   map[types.UID]*v1.Pod
	seen   bool
}

// NewMerger returns a Merger for the "file" source.
func NewMerger() *Merger { return &Merger{Source: kubetypes.FileSource} }

// Merge takes the source's complete current set and returns the updates that lead there.
func (m *Merger) Merge(set []*v1.Pod) []kubetypes.PodUpdate {
	firstSet := !m.seen
	m.seen = true
	old := m.pods
	m.pods = make(map[types.UID]*v1.Pod, len(set))

	var adds, updates, deletes, removes, reconciles []*v1.Pod
	for _, incoming := range set {
		existing, known := old[incoming.UID]
		if !known {
			pod := incoming.DeepCopy() // the caller's pods stay untouched
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[kubetypes.ConfigSourceAnnotationKey] = m.Source
			pod.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] = kubetypes.NewTimestamp().GetString()
			m.pods[pod.UID] = pod
			adds = append(adds, pod)
			continue
		}
		m.pods[existing.UID] = existing
		// The source annotation is a local one: comparing without it is comparing with it set.
		switch compare(existing, incoming) {
		case changed:
			updates = append(updates, existing)
		case deleted:
			deletes = append(deletes, existing)
		case statusOnly:
			reconciles = append(reconciles, existing)
		}
	}
	for uid, pod := range old {
		if _, still := m.pods[uid]; !still {
			removes = append(removes, pod)
		}
	}

	var out []kubetypes.PodUpdate
	emit := func(op kubetypes.PodOperation, pods []*v1.Pod, evenIfEmpty bool) {
		if len(pods) > 0 || evenIfEmpty {
			out = append(out, kubetypes.PodUpdate{Op: op, Source: m.Source, Pods: copies(pods)})
		}
	}
	emit(kubetypes.REMOVE, removes, false)
	emit(kubetypes.ADD, adds, false)
	emit(kubetypes.UPDATE, updates, false)
	emit(kubetypes.DELETE, deletes, false)
	emit(kubetypes.ADD, nil, firstSet && len(adds)+len(updates)+len(deletes) == 0)
	emit(kubetypes.RECONCILE, reconciles, false)
	return out
}

type change int

const (
	same change = iota
	statusOnly
	changed
	deleted
)

// compare is the kubelet's checkAndUpdatePod (pkg/kubelet/config/config.go#L366-L405 (func checkAndUpdatePod)):
// it updates existing in place from (a copy of) incoming and says what kind of change that was.
func compare(existing, incoming *v1.Pod) change {
	if !differ(existing, incoming) {
		if reflect.DeepEqual(existing.Status, incoming.Status) {
			return same
		}
		existing.Status = *incoming.Status.DeepCopy()
		return statusOnly
	}
	incoming = incoming.DeepCopy()
	existing.Spec = incoming.Spec
	existing.Labels = incoming.Labels
	existing.DeletionTimestamp = incoming.DeletionTimestamp
	existing.DeletionGracePeriodSeconds = incoming.DeletionGracePeriodSeconds
	existing.Generation = incoming.Generation
	existing.Status = incoming.Status
	// The new annotations, but the kubelet's own (source, mirror, first seen) stay as they were.
	annotations := make(map[string]string, len(incoming.Annotations))
	for k, v := range incoming.Annotations {
		annotations[k] = v
	}
	annotations[kubetypes.ConfigSourceAnnotationKey] = existing.Annotations[kubetypes.ConfigSourceAnnotationKey]
	for k := range localAnnotations {
		if v, ok := existing.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	existing.Annotations = annotations
	if incoming.DeletionTimestamp != nil {
		return deleted
	}
	return changed
}

// localAnnotations are the ones the kubelet sets itself; they never make two pods differ
// (pkg/kubelet/config/config.go#L286-L290 (var localAnnotations)).
var localAnnotations = map[string]bool{
	kubetypes.ConfigSourceAnnotationKey:    true,
	kubetypes.ConfigMirrorAnnotationKey:    true,
	kubetypes.ConfigFirstSeenAnnotationKey: true,
}

// differ is podsDifferSemantically (pkg/kubelet/config/config.go#L349-L358 (func podsDifferSemantically)).
func differ(a, b *v1.Pod) bool {
	return !reflect.DeepEqual(a.Spec, b.Spec) ||
		!reflect.DeepEqual(a.Labels, b.Labels) ||
		!reflect.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!reflect.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds) ||
		!sameAnnotations(a.Annotations, b.Annotations)
}

// sameAnnotations compares two annotation maps leaving out the local ones.
func sameAnnotations(a, b map[string]string) bool {
	count := func(m map[string]string) int {
		n := 0
		for k := range m {
			if !localAnnotations[k] {
				n++
			}
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, v := range b {
		if av, ok := a[k]; !localAnnotations[k] && (!ok || av != v) {
			return false
		}
	}
	return true
}

// OpName names a pod operation, for logs and for the reader.
func OpName(op kubetypes.PodOperation) string {
	names := [...]string{"ADD", "DELETE", "REMOVE", "UPDATE", "RECONCILE"}
	if int(op) < len(names) {
		return names[op]
	}
	return fmt.Sprintf("op(%d)", op)
}

func copies(pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.DeepCopy())
	}
	return out
}
