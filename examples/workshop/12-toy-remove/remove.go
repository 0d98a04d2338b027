// Package toyremove is workshop exercise 12: the REMOVE branch of a toy kubelet's sync loop.
//
// PodManager keeps the pods a kubelet runs, as chapter 05's toy does. ADD and UPDATE work;
// remove is yours to write. Run `make check EX=12` until it passes. (A reference solution is in
// ../solutions — look only when you are done.)
package toyremove

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// PodManager is a toy pod manager.
type PodManager struct {
	// Pods are the pods the kubelet runs, by UID.
	Pods map[types.UID]*v1.Pod
	// Removed remembers when each removed pod went, for garbage collection.
	Removed map[types.UID]time.Time
}

// NewPodManager returns an empty manager.
func NewPodManager() *PodManager {
	return &PodManager{Pods: map[types.UID]*v1.Pod{}, Removed: map[types.UID]time.Time{}}
}

// Apply applies one update from PodConfig, at time now.
func (m *PodManager) Apply(u kubetypes.PodUpdate, now time.Time) {
	for _, pod := range u.Pods {
		switch u.Op {
		case kubetypes.ADD, kubetypes.UPDATE:
			m.Pods[pod.UID] = pod
			delete(m.Removed, pod.UID)
		case kubetypes.REMOVE:
			m.remove(pod.UID, now)
		}
	}
}

// remove takes the pod out of the manager and remembers when it went. Removing a pod the
// manager does not know changes nothing.
func (m *PodManager) remove(uid types.UID, now time.Time) {
	// Exercise 12: write this.
	_, _ = uid, now
}
