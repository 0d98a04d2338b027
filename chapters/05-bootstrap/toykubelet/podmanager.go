package toykubelet

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podManager holds the pods the kubelet runs, with the status the kubelet gives them, and
// remembers removed pods until garbage collection forgets them. The real kubelet splits this
// between its pod manager, status manager and pod workers.
type podManager struct {
	mu       sync.RWMutex
	pods     map[types.UID]*v1.Pod
	removed  map[types.UID]time.Time
	watchers map[chan podEvent]struct{}
}

// podEvent tells watchers (the Pods API) what changed.
type podEvent struct {
	added, deleted bool
	pod            *v1.Pod
}

func newPodManager() *podManager {
	return &podManager{pods: map[types.UID]*v1.Pod{}, removed: map[types.UID]time.Time{}, watchers: map[chan podEvent]struct{}{}}
}

// set stores a copy of pod and tells the watchers.
func (m *podManager) set(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, known := m.pods[pod.UID]
	m.pods[pod.UID] = pod.DeepCopy()
	delete(m.removed, pod.UID)
	m.notify(podEvent{added: !known, pod: pod.DeepCopy()})
}

// get returns a copy of the pod with this UID.
func (m *podManager) get(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pod, ok := m.pods[uid]
	if !ok {
		return nil, false
	}
	return pod.DeepCopy(), true
}

// remove forgets the pod and remembers when it went.
func (m *podManager) remove(uid types.UID, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pod, ok := m.pods[uid]
	if !ok {
		return
	}
	delete(m.pods, uid)
	m.removed[uid] = at
	m.notify(podEvent{deleted: true, pod: pod.DeepCopy()})
}

// forgetRemoved drops the memory of pods removed before cutoff and returns their UIDs.
func (m *podManager) forgetRemoved(cutoff time.Time) []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	var forgotten []types.UID
	for uid, at := range m.removed {
		if at.Before(cutoff) {
			delete(m.removed, uid)
			forgotten = append(forgotten, uid)
		}
	}
	return forgotten
}

func (m *podManager) removedUIDs() []types.UID {
	m.mu.RLock()
	defer m.mu.RUnlock()
	uids := make([]types.UID, 0, len(m.removed))
	for uid := range m.removed {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	return uids
}

// list returns copies of all pods, sorted by namespace and name.
func (m *podManager) list() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*v1.Pod, 0, len(m.pods))
	for _, p := range m.pods {
		out = append(out, p.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// byName finds a pod by namespace and name.
func (m *podManager) byName(namespace, name string) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, p := range m.pods {
		if p.Namespace == namespace && p.Name == name {
			return p.DeepCopy(), true
		}
	}
	return nil, false
}

// watch returns a channel of changes and a function that stops them. The channel is buffered;
// a watcher too slow to keep up misses events rather than blocking the kubelet.
func (m *podManager) watch() (<-chan podEvent, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan podEvent, 100)
	m.watchers[ch] = struct{}{}
	return ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.watchers, ch)
	}
}

func (m *podManager) notify(e podEvent) {
	for ch := range m.watchers {
		select {
		case ch <- e:
		default:
		}
	}
}
