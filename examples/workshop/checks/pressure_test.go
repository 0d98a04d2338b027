package checks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// qosPod is one of exercise 18's pods as the apiserver has it, made ten minutes before now.
func qosPod(name string, class corev1.PodQOSClass, phase corev1.PodPhase, conditions ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: qosNamespace, Name: name, UID: types.UID("0000-" + name), CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Minute))},
		Status:     corev1.PodStatus{Phase: phase, QOSClass: class, Conditions: conditions},
	}
}

func qosPodsIn(phase corev1.PodPhase, conditions map[string][]corev1.PodCondition) []runtime.Object {
	return []runtime.Object{
		qosPod("besteffort", corev1.PodQOSBestEffort, phase, conditions["besteffort"]...),
		qosPod("burstable", corev1.PodQOSBurstable, phase, conditions["burstable"]...),
		qosPod("guaranteed", corev1.PodQOSGuaranteed, phase, conditions["guaranteed"]...),
	}
}

func TestQoSOnTheNode(t *testing.T) {
	const file = "18-qos-on-the-node.yaml"
	crictl := "0000-besteffort /kubepods/besteffort/pod0000-besteffort 1000\n" +
		"0000-burstable /kubepods/burstable/pod0000-burstable 998\n" +
		"0000-guaranteed /kubepods/pod0000-guaranteed -997\n"
	good := "cgroupDriver: cgroupfs\n" +
		"besteffort: {qosClass: BestEffort, cgroup: /kubepods/besteffort/pod0000-besteffort, oomScoreAdj: 1000}\n" +
		"burstable: {qosClass: Burstable, cgroup: /kubepods/burstable/pod0000-burstable, oomScoreAdj: 998}\n" +
		"guaranteed: {qosClass: Guaranteed, cgroup: /kubepods/pod0000-guaranteed, oomScoreAdj: -997}\n"
	tests := []struct {
		name    string
		pods    []runtime.Object
		node    string // what crictl says on the node
		answers string // "" writes no file
		want    string // "" passes
	}{
		{"done", qosPodsIn(corev1.PodRunning, nil), crictl, good, ""},
		{"no answers", qosPodsIn(corev1.PodRunning, nil), crictl, "", "your answers in"},
		{"the template", qosPodsIn(corev1.PodRunning, nil), crictl, "cgroupDriver: \"\"\nbesteffort: {qosClass: \"\", cgroup: \"\", oomScoreAdj: 0}\n", "besteffort.cgroup, besteffort.oomScoreAdj"},
		{"did not do it: no pods", nil, "", good, "the pod qos/besteffort: kubectl apply -f"},
		{"did not do it: the README's samples", qosPodsIn(corev1.PodRunning, nil), crictl,
			strings.ReplaceAll(good, "pod0000-", "pod…"), "besteffort.cgroup"},
		{"the pods of an earlier run, deleted and made again", qosPodsIn(corev1.PodRunning, nil),
			strings.ReplaceAll(crictl, "0000-", "1111-"), good, "crictl on the node found no ready sandbox"},
		{"the pods evicted since", qosPodsIn(corev1.PodSucceeded, nil), crictl, good, "running"},
		{"the systemd driver's names", qosPodsIn(corev1.PodRunning, nil), strings.ReplaceAll(crictl, "/kubepods/besteffort/pod0000-besteffort", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0000_besteffort.slice"),
			strings.ReplaceAll(good, "/kubepods/besteffort/pod0000-besteffort", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0000_besteffort.slice"), ""},
		{"a driver guessed", qosPodsIn(corev1.PodRunning, nil), crictl, strings.Replace(good, "cgroupfs", "systemd", 1), "cgroupDriver"},
		{"classes swapped", qosPodsIn(corev1.PodRunning, nil), crictl, strings.Replace(strings.Replace(good, "{qosClass: Burstable", "{qosClass: Guaranteed", 1), "{qosClass: Guaranteed, cgroup: /kubepods/pod", "{qosClass: Burstable, cgroup: /kubepods/pod", 1), "burstable.qosClass"},
		{"a score miscomputed", qosPodsIn(corev1.PodRunning, nil), crictl, strings.Replace(good, "oomScoreAdj: 998", "oomScoreAdj: 997", 1), "burstable.oomScoreAdj"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.pods...)
			c.raw["/api/v1/nodes/minikube/proxy/configz"] = `{"kubeletconfig":{"cgroupDriver":"cgroupfs"}}`
			c.node["crictl inspectp"] = tt.node
			if tt.answers != "" {
				c.answer(file, tt.answers)
			}
			expect(t, c.check(checkQoSOnTheNode), tt.want, tt.name)
		})
	}
}

func TestEviction(t *testing.T) {
	const file = "19-eviction.yaml"
	evicted := func(message string) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonTerminationByKubelet, Message: message}
	}
	const lowOn = "The node was low on resource: memory. Threshold quantity: 23746Mi, available: 24049012Ki. "
	done := qosPodsIn(corev1.PodSucceeded, map[string][]corev1.PodCondition{"burstable": {evicted(lowOn)}, "guaranteed": {evicted(lowOn)}})
	event := func(kind, namespace, name, uid, reason, message string, at time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s.%d", name, at.Unix())}, Reason: reason, Message: message,
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: namespace, Name: name, UID: types.UID(uid)},
			Source:         corev1.EventSource{Component: "kubelet"}, FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at)}
	}
	refused := event("Pod", qosNamespace, "besteffort", "0000-besteffort", "Evicted", "The node had condition: [MemoryPressure]. ", now.Add(-5*time.Minute))
	pressure := event("Node", "default", "minikube", "minikube", memoryPressureEvent, "Node minikube status is now: NodeHasInsufficientMemory", now.Add(-5*time.Minute))
	journalOf := func(first, second string, at time.Time) string {
		return journalText("kubelet", at, `I1207 03:35:39.953875    3306 eviction_manager.go:658] "Eviction manager: pod is evicted successfully" pod="qos/`+first+`"`) +
			journalText("kubelet", at.Add(time.Second), `I1207 03:35:40.953875    3306 eviction_manager.go:658] "Eviction manager: pod is evicted successfully" pod="qos/`+second+`"`)
	}
	journal := journalOf("guaranteed", "burstable", now.Add(-5*time.Minute))
	good := "threshold: 23746Mi\nevictedFirst: guaranteed\nbesteffort: 'The node had condition: [MemoryPressure].'\npressure: KubeletHasInsufficientMemory\n"
	with := func(objects []runtime.Object, more ...runtime.Object) []runtime.Object {
		return append(append([]runtime.Object{}, objects...), more...)
	}
	tests := []struct {
		name    string
		objects []runtime.Object
		journal string
		answers string // "" writes no file
		want    string // "" passes
	}{
		{"done", with(done, refused, pressure), journal, good, ""},
		{"no answers", with(done, refused, pressure), journal, "", "your answers in"},
		{"did not do it: no pods", nil, "", good, "the pod qos/besteffort: kubectl apply -f"},
		{"did not do it: the pods of exercise 18, no threshold", qosPodsIn(corev1.PodRunning, nil), "", good, "no DisruptionTarget condition"},
		{"terminated by the kubelet, not for memory", with(qosPodsIn(corev1.PodSucceeded, map[string][]corev1.PodCondition{"burstable": {evicted("Preempted in order to admit critical pod")}, "guaranteed": {evicted(lowOn)}}), refused, pressure),
			journal, good, "the kubelet's condition names no threshold"},
		{"the threshold guessed", with(done, refused, pressure), journal, strings.Replace(good, "23746Mi", "200Mi", 1), "threshold: the kubelet evicted"},
		{"QoS taken for the order", with(done, refused, pressure), journal, strings.Replace(good, "evictedFirst: guaranteed", "evictedFirst: burstable", 1), "evictedFirst: the kubelet's journal says otherwise"},
		{"the other order, as the kubelet did it", with(done, refused, pressure), journalOf("burstable", "guaranteed", now.Add(-5*time.Minute)),
			strings.Replace(good, "evictedFirst: guaranteed", "evictedFirst: burstable", 1), ""},
		{"the journal of an earlier run only", with(done, refused, pressure), journalOf("guaranteed", "burstable", now.Add(-time.Hour)), good, "both evictions since the pods were made"},
		{"the BestEffort pod evicted, not refused", with(done, event("Pod", qosNamespace, "besteffort", "0000-besteffort", "Evicted", lowOn, now.Add(-5*time.Minute)), pressure),
			journal, strings.Replace(good, "'The node had condition: [MemoryPressure].'", "'"+strings.TrimSpace(lowOn)+"'", 1), ""},
		{"the BestEffort pod's message made up", with(done, refused, pressure), journal, strings.Replace(good, "[MemoryPressure]", "[DiskPressure]", 1), "besteffort: the message"},
		{"an event of an earlier besteffort pod", with(done, event("Pod", qosNamespace, "besteffort", "an-earlier-uid", "Evicted", "The node had condition: [MemoryPressure]. ", now.Add(-time.Hour)), pressure),
			journal, good, "none for the pod of this run"},
		{"no pressure since the pods were made", with(done, refused, event("Node", "default", "minikube", "minikube", memoryPressureEvent, "", now.Add(-time.Hour))), journal, good, "did not go True"},
		{"the condition's type for its reason", with(done, refused, pressure), journal, strings.Replace(good, "KubeletHasInsufficientMemory", "MemoryPressure", 1), "pressure: the reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.objects...)
			c.node["journalctl --unit kubelet"] = tt.journal
			if tt.answers != "" {
				c.answer(file, tt.answers)
			}
			expect(t, c.check(checkEviction), tt.want, tt.name)
		})
	}
}

func TestCrashLoop(t *testing.T) {
	const file = "20-crashloop.yaml"
	pod := func(restarts int32) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "crashloop", Name: "crashloop", UID: "c0ffee00-0000-4000-8000-000000000001"},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "pause", RestartCount: restarts}}}}
	}
	backOff := func(uid string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "crashloop", Name: "crashloop." + uid}, Reason: "BackOff", Type: corev1.EventTypeWarning,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "crashloop", Name: "crashloop", UID: types.UID(uid)},
			Source:         corev1.EventSource{Component: "kubelet"}, Message: "Back-off restarting failed container pause in pod crashloop_crashloop(" + uid + ")"}
	}
	const uid = "c0ffee00-0000-4000-8000-000000000001"
	journalOf := func(uid string, waits ...string) string {
		var b strings.Builder
		for i, w := range waits {
			for range 2 { // the pod worker meets a wait more than once
				b.WriteString(journalText("kubelet", now.Add(time.Duration(i)*time.Minute), `E1207 03:50:00.000000    512 pod_workers.go:1338] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"pause\" with CrashLoopBackOff: \"back-off `+
					w+` restarting failed container=pause pod=crashloop_crashloop(`+uid+`)\"" pod="crashloop/crashloop" podUID="`+uid+`"`))
			}
		}
		return b.String()
	}
	good := "backOffs: [10s, 20s, 40s]\nevent: 'Back-off restarting failed container pause in pod crashloop_crashloop(" + uid + ")'\n"
	tests := []struct {
		name    string
		objects []runtime.Object
		journal string
		answers string // "" writes no file
		want    string // "" passes
	}{
		{"done", []runtime.Object{pod(3), backOff(uid)}, journalOf(uid, "10s", "20s", "40s"), good, ""},
		{"done, and more waits seen", []runtime.Object{pod(5), backOff(uid)}, journalOf(uid, "10s", "20s", "40s", "1m20s", "2m40s"), "backOffs: [10s, 20s, 40s, 1m20s]\nevent: 'Back-off restarting failed container pause in pod crashloop_crashloop(" + uid + ")'\n", ""},
		{"no answers", []runtime.Object{pod(3), backOff(uid)}, journalOf(uid, "10s", "20s", "40s"), "", "your answers in"},
		{"did not do it: no pod", nil, "", good, "kubectl apply -f examples/workshop/20-crashloop/crashloop.yaml"},
		{"not waited for", []runtime.Object{pod(1), backOff(uid)}, journalOf(uid, "10s"), good, "restarted 3 times at least"},
		{"the doubling guessed, not read", []runtime.Object{pod(3), backOff(uid)}, journalOf(uid, "10s", "20s", "40s"), strings.Replace(good, "[10s, 20s, 40s]", "[10s, 20s, 40s, 80s]", 1), "the kubelet's journal gives"},
		{"an earlier pod's journal only", []runtime.Object{pod(3), backOff(uid)}, journalOf("an-earlier-one", "10s", "20s", "40s"), good, "three waits for the pod that runs now"},
		{"an earlier pod's event only", []runtime.Object{pod(3), backOff("an-earlier-one")}, journalOf(uid, "10s", "20s", "40s"),
			strings.Replace(good, uid+")'", "an-earlier-one)'", 1), "event: the message"},
		{"too few waits", []runtime.Object{pod(3), backOff(uid)}, journalOf(uid, "10s", "20s", "40s"), strings.Replace(good, "[10s, 20s, 40s]", "[10s]", 1), "the first three waits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.objects...)
			c.node["journalctl --unit kubelet"] = tt.journal
			if tt.answers != "" {
				c.answer(file, tt.answers)
			}
			expect(t, c.check(checkCrashLoop), tt.want, tt.name)
		})
	}
}
