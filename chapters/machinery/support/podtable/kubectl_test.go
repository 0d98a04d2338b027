package podtable

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	core "k8s.io/kubernetes/pkg/apis/core"
	corev1conv "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
)

// Summarize against the apiserver's own pod table printer (what kubectl get pods shows), on the
// same pods: READY, STATUS and RESTARTS must agree cell for cell.
func TestSummarizeMatchesKubectl(t *testing.T) {
	now := time.Now()
	tenDaysAgo := metav1.NewTime(now.Add(-10 * 24 * time.Hour))
	deleting := metav1.NewTime(now)
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	waiting := func(reason string) v1.ContainerState {
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
	}
	terminated := func(reason string, code, signal int32) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: reason, ExitCode: code, Signal: signal}}
	}
	containers := func(names ...string) []v1.Container {
		var cs []v1.Container
		for _, n := range names {
			cs = append(cs, v1.Container{Name: n, Image: "x"})
		}
		return cs
	}
	status := func(name string, state v1.ContainerState, ready bool, restarts int32) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: state, Ready: ready, RestartCount: restarts}
	}
	crashed := status("main", waiting("CrashLoopBackOff"), false, 7)
	crashed.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 1, FinishedAt: tenDaysAgo}
	sidecar := v1.Container{Name: "sidecar", Image: "x", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}
	readyCond := []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}

	pods := map[string]v1.Pod{
		"running": {Spec: v1.PodSpec{Containers: containers("a", "b")}, Status: v1.PodStatus{Phase: v1.PodRunning,
			ContainerStatuses: []v1.ContainerStatus{status("a", running, true, 0), status("b", running, false, 2)}}},
		"crash loop, with the last restart's time": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodRunning,
			ContainerStatuses: []v1.ContainerStatus{crashed}}},
		"creating": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodPending,
			ContainerStatuses: []v1.ContainerStatus{status("main", waiting("ContainerCreating"), false, 0)}}},
		"image pull": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodPending,
			ContainerStatuses: []v1.ContainerStatus{status("main", waiting("ImagePullBackOff"), false, 0)}}},
		"completed": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodSucceeded,
			ContainerStatuses: []v1.ContainerStatus{status("main", terminated("Completed", 0, 0), false, 0)}}},
		"error exit": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodFailed,
			ContainerStatuses: []v1.ContainerStatus{status("main", terminated("Error", 2, 0), false, 0)}}},
		"OOM killed": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodRunning,
			ContainerStatuses: []v1.ContainerStatus{status("main", terminated("OOMKilled", 137, 0), false, 1)}}},
		"signal, no reason": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodFailed,
			ContainerStatuses: []v1.ContainerStatus{status("main", terminated("", 0, 9), false, 0)}}},
		"one completed, one running, ready": {Spec: v1.PodSpec{Containers: containers("a", "b")}, Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: readyCond,
			ContainerStatuses: []v1.ContainerStatus{status("a", running, true, 0), status("b", terminated("Completed", 0, 0), false, 0)}}},
		"one completed, one running, not ready": {Spec: v1.PodSpec{Containers: containers("a", "b")}, Status: v1.PodStatus{Phase: v1.PodRunning,
			ContainerStatuses: []v1.ContainerStatus{status("a", running, true, 0), status("b", terminated("Completed", 0, 0), false, 0)}}},
		"init running": {Spec: v1.PodSpec{InitContainers: containers("init1", "init2"), Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodPending,
			InitContainerStatuses: []v1.ContainerStatus{status("init1", terminated("Completed", 0, 0), false, 0), status("init2", running, false, 0)}}},
		"init crash loop": {Spec: v1.PodSpec{InitContainers: containers("init"), Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodPending,
			InitContainerStatuses: []v1.ContainerStatus{status("init", waiting("CrashLoopBackOff"), false, 3)}}},
		"init failed": {Spec: v1.PodSpec{InitContainers: containers("init"), Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodFailed,
			InitContainerStatuses: []v1.ContainerStatus{status("init", terminated("", 3, 0), false, 0)}}},
		"sidecar started": {Spec: v1.PodSpec{InitContainers: []v1.Container{sidecar}, Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodRunning,
			Conditions:            []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue}},
			InitContainerStatuses: []v1.ContainerStatus{{Name: "sidecar", State: running, Ready: true, Started: ptr.To(true), RestartCount: 4}},
			ContainerStatuses:     []v1.ContainerStatus{status("main", running, true, 1)}}},
		"evicted": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}},
		"scheduling gated": {Spec: v1.PodSpec{Containers: containers("main")}, Status: v1.PodStatus{Phase: v1.PodPending,
			Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Reason: v1.PodReasonSchedulingGated}}}},
		"terminating": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Spec: v1.PodSpec{Containers: containers("main")},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{status("main", running, true, 0)}}},
		"node lost": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Spec: v1.PodSpec{Containers: containers("main")},
			Status: v1.PodStatus{Phase: v1.PodRunning, Reason: "NodeLost"}},
		"deleted after success": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Spec: v1.PodSpec{Containers: containers("main")},
			Status: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{status("main", terminated("Completed", 0, 0), false, 0)}}},
	}

	generator := printers.NewTableGenerator().With(printersinternal.AddHandlers)
	for name, pod := range pods {
		t.Run(name, func(t *testing.T) {
			pod.Name, pod.Namespace = "p", "default"
			var internal core.Pod
			require.NoError(t, corev1conv.Convert_v1_Pod_To_core_Pod(&pod, &internal, nil))
			table, err := generator.GenerateTable(&internal, printers.GenerateOptions{})
			require.NoError(t, err)
			require.Len(t, table.Rows, 1)
			cells := table.Rows[0].Cells // NAME READY STATUS RESTARTS AGE
			want := Summary{Ready: cells[1].(string), Status: cells[2].(string), Restarts: cells[3].(string)}
			if want.Status == "" {
				want.Status = "Unknown" // our one deviation: no empty cell
			}
			assert.Equal(t, want, Summarize(&pod, time.Now()))
		})
	}
	// The cases that matter most are really covered, not vacuously equal.
	assert.Equal(t, "CrashLoopBackOff", Summarize(ptr.To(pods["crash loop, with the last restart's time"]), now).Status)
	assert.Equal(t, "7 (10d ago)", Summarize(ptr.To(pods["crash loop, with the last restart's time"]), now).Restarts)
	assert.Equal(t, "Init:CrashLoopBackOff", Summarize(ptr.To(pods["init crash loop"]), now).Status)
	assert.Equal(t, "2/2", Summarize(ptr.To(pods["sidecar started"]), now).Ready)
}
