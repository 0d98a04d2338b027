package toykubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/events"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
)

// Run is the sync loop: it reads pod updates until the channel closes or ctx ends (the real
// loop does not watch ctx, and its channel never closes), and applies
// each to the pod manager, as the real syncLoopIteration dispatches them to HandlePodAdditions,
// HandlePodUpdates, HandlePodRemoves and HandlePodReconcile
// (pkg/kubelet/kubelet.go#L2750-L2783 (case u, open := <-configCh:)).
//
// There is no SET operation: v1.37.2's sources send full sets that PodConfig turns into the
// operations below (pkg/kubelet/types/pod_update.go#L42-L51 (ADD PodOperation = iota)).
func (k *Kubelet) Run(ctx context.Context, updates <-chan kubetypes.PodUpdate) {
	logger := klog.FromContext(ctx)
	logger.Info("Toy kubelet sync loop started", "node", k.opts.NodeName)
	for {
		select {
		case <-ctx.Done():
			logger.Info("Toy kubelet sync loop stopped")
			return
		case u, open := <-updates:
			if !open {
				logger.Info("Pod updates closed; sync loop stopped")
				return
			}
			k.handle(ctx, u)
		}
	}
}

// handle applies one update.
func (k *Kubelet) handle(ctx context.Context, u kubetypes.PodUpdate) {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Pod update", "op", staticpods.OpName(u.Op), "source", u.Source, "pods", klog.KObjSlice(u.Pods))
	for _, pod := range u.Pods {
		switch u.Op {
		case kubetypes.ADD:
			// A new pod: Pending while its containers are "created", then Running.
			k.pods.set(pending(pod))
			k.start(pod)
		case kubetypes.UPDATE:
			// A new spec for a known pod: keep its status, restart containers whose image changed.
			k.update(pod)
		case kubetypes.RECONCILE:
			// Only the status in the source changed; the kubelet owns the status, so it keeps its
			// own and takes the rest of the object.
			if current, ok := k.pods.get(pod.UID); ok {
				next := pod.DeepCopy()
				next.Status = current.Status
				k.pods.set(next)
			}
		case kubetypes.DELETE:
			// Graceful deletion asked by the source: stop the containers, keep the pod listed
			// (it is still in the source) as finished.
			k.stop(pod)
		case kubetypes.REMOVE:
			// Gone from the source: stop it and forget it; garbage collection forgets the memory.
			k.stop(pod)
			k.pods.remove(pod.UID, k.clock.Now())
		default:
			logger.Error(nil, "Unknown pod operation", "op", u.Op)
		}
	}
}

// pending is the pod as first seen: Pending, each container waiting for its creation.
func pending(pod *v1.Pod) *v1.Pod {
	p := pod.DeepCopy()
	p.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBestEffort}
	for _, c := range pod.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		})
	}
	return p
}

// start "runs" the pod's containers: each gets the Pulled, Created and Started events of a real
// start, and a running status; the pod becomes Running and Ready.
func (k *Kubelet) start(pod *v1.Pod) {
	now := metav1.NewTime(k.clock.Now())
	p := pod.DeepCopy()
	p.Status = v1.PodStatus{
		Phase: v1.PodRunning, StartTime: &now, QOSClass: v1.PodQOSBestEffort,
		HostIP: "127.0.0.1", PodIP: "127.0.0.1",
		Conditions: conditions(now, v1.ConditionTrue),
	}
	for _, c := range pod.Spec.Containers {
		k.recorder.Eventf(p, v1.EventTypeNormal, events.PulledImage, "Container image %q already present on machine", c.Image)
		k.recorder.Eventf(p, v1.EventTypeNormal, events.CreatedContainer, "Created container: %s", c.Name)
		k.recorder.Eventf(p, v1.EventTypeNormal, events.StartedContainer, "Started container %s", c.Name)
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, running(p, c, now))
	}
	k.pods.set(p)
}

// update takes a new spec for a running pod: containers whose image changed restart.
func (k *Kubelet) update(pod *v1.Pod) {
	current, ok := k.pods.get(pod.UID)
	if !ok {
		k.pods.set(pending(pod))
		k.start(pod)
		return
	}
	now := metav1.NewTime(k.clock.Now())
	previous := map[string]v1.ContainerStatus{}
	for _, cs := range current.Status.ContainerStatuses {
		previous[cs.Name] = cs
	}
	next := pod.DeepCopy()
	next.Status = current.Status
	next.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		cs, known := previous[c.Name]
		if !known || cs.Image != c.Image {
			k.recorder.Eventf(next, v1.EventTypeNormal, events.StartedContainer, "Started container %s", c.Name)
			cs = running(next, c, now)
		}
		next.Status.ContainerStatuses = append(next.Status.ContainerStatuses, cs)
	}
	k.pods.set(next)
}

// stop ends the pod's containers: each is terminated with exit code 0, the pod Succeeded.
func (k *Kubelet) stop(pod *v1.Pod) {
	current, ok := k.pods.get(pod.UID)
	if !ok {
		return
	}
	now := metav1.NewTime(k.clock.Now())
	current.ObjectMeta.DeletionTimestamp = pod.DeletionTimestamp
	current.Status.Phase = v1.PodSucceeded
	current.Status.Conditions = conditions(now, v1.ConditionFalse)
	for i, cs := range current.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			continue // already stopped (a DELETE came first)
		}
		k.recorder.Eventf(current, v1.EventTypeNormal, events.KillingContainer, "Stopping container %s", cs.Name)
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		current.Status.ContainerStatuses[i].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID,
		}}
		current.Status.ContainerStatuses[i].Ready = false
		current.Status.ContainerStatuses[i].Started = new(false)
	}
	k.pods.set(current)
}

func running(pod *v1.Pod, c v1.Container, now metav1.Time) v1.ContainerStatus {
	id := fmt.Sprintf("toy://%s/%s", pod.UID, c.Name)
	return v1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: "toy://" + c.Image, ContainerID: id,
		Ready: true, Started: new(true),
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}},
	}
}

func conditions(now metav1.Time, ready v1.ConditionStatus) []v1.PodCondition {
	var out []v1.PodCondition
	for _, t := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
		status := v1.ConditionTrue
		if t == v1.PodReady || t == v1.ContainersReady {
			status = ready
		}
		out = append(out, v1.PodCondition{Type: t, Status: status, LastTransitionTime: now})
	}
	return out
}
