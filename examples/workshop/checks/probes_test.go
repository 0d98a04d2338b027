package checks

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// exercise 14's cluster: the pod of dns.yaml, its events, its Service's EndpointSlice.
type dnsState struct {
	noPod, noProbe, notReady bool
	restarts                 int32
	events                   []*corev1.Event
	endpointReady            bool
}

func (s dnsState) objects() []runtime.Object {
	var objects []runtime.Object
	if !s.noPod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "probes", Name: "dns", UID: "dns-uid"},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns"}}},
			Status: corev1.PodStatus{PodIP: "10.244.0.7", ContainerStatuses: []corev1.ContainerStatus{{Name: "coredns", RestartCount: s.restarts, Ready: !s.notReady}}}}
		if !s.noProbe {
			pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}}}
		}
		status := corev1.ConditionTrue
		if s.notReady {
			status = corev1.ConditionFalse
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		objects = append(objects, pod)
	}
	for _, e := range s.events {
		objects = append(objects, e)
	}
	objects = append(objects, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "probes", Name: "dns-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "dns"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &s.endpointReady},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "probes", Name: "dns", UID: "dns-uid"}}},
	})
	return objects
}

func unhealthy(name string, uid string, message string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "probes", Name: name}, Reason: "Unhealthy", Type: corev1.EventTypeWarning,
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "probes", Name: "dns", UID: "dns-uid"}, Message: message}
}

func TestReadinessProbe(t *testing.T) {
	const (
		refused = `Readiness probe failed: Get "http://10.244.0.7:8181/ready": dial tcp 10.244.0.7:8181: connect: connection refused`
		got503  = "Readiness probe failed: HTTP probe failed with statuscode: 503"
		good    = "event: 'Readiness probe failed: HTTP probe failed with statuscode: 503'\nnotReady: kubernetes\nendpointBefore: dns 10.244.0.7 ready=false\n"
	)
	events := []*corev1.Event{unhealthy("dns.1", "dns-uid", refused), unhealthy("dns.2", "dns-uid", got503)}
	done := dnsState{events: events, endpointReady: true}
	with := func(s dnsState, change func(*dnsState)) dnsState { change(&s); return s }
	earlierPod := unhealthy("dns.3", "dns-uid", got503)
	earlierPod.InvolvedObject.UID = "an-earlier-dns"

	tests := []struct {
		name    string
		state   dnsState
		answers string // "" writes no file
		want    string // "" passes
	}{
		{"nothing applied", dnsState{noPod: true}, good, "the Pod probes/dns: kubectl apply -f"},
		{"the template", done, "event: \"\"\nnotReady: \"\"\nendpointBefore: \"\"\n", "endpointBefore, event, notReady still empty"},
		{"no answers", done, "", "your answers in"},
		{"done", done, good, ""},
		{"the answers as kubectl shows them", done, "event: 'Warning   Unhealthy   pod/dns   Readiness probe failed: HTTP probe failed with statuscode: 503'\nnotReady: '\"kubernetes\"'\nendpointBefore: '10.244.0.7 false'\n", ""},
		{"the probe taken away", with(done, func(s *dnsState) { s.noProbe = true }), good, "readiness probe as"},
		{"never refused: the permissions bound before the pod", with(done, func(s *dnsState) { s.events = events[:1] }), good, "CoreDNS's /ready never refused it"},
		{"an earlier pod's events", with(done, func(s *dnsState) { s.events = []*corev1.Event{earlierPod} }), good, "CoreDNS's /ready never refused it"},
		{"the first event, not the one that lasts", done, "event: '" + refused + "'\nnotReady: kubernetes\nendpointBefore: dns 10.244.0.7 ready=false\n", "is from before CoreDNS listened"},
		{"another plugin", done, "event: '" + got503 + "'\nnotReady: ready\nendpointBefore: dns 10.244.0.7 ready=false\n", "notReady: the plugin"},
		{"another pod's endpoint", done, "event: '" + got503 + "'\nnotReady: kubernetes\nendpointBefore: dns 10.244.0.9 ready=false\n", "endpointBefore: the EndpointSlice's line"},
		{"the endpoint after the fix", done, "event: '" + got503 + "'\nnotReady: kubernetes\nendpointBefore: dns 10.244.0.7 ready=true\n", "endpointBefore: the EndpointSlice's line"},
		{"not fixed", with(done, func(s *dnsState) { s.notReady, s.endpointReady = true, false }), good, "dns Ready (1/1): it is still 0/1"},
		{"restarted", with(done, func(s *dnsState) { s.restarts = 1 }), good, "container coredns restarted 1 times"},
		{"the EndpointSlice not caught up", with(done, func(s *dnsState) { s.endpointReady = false }), good, "EndpointSlice to list dns as ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.state.objects()...)
			if tt.answers != "" {
				c.answer("14-readiness-probe.yaml", tt.answers)
			}
			expect(t, c.check(checkReadinessProbe), tt.want, tt.name)
		})
	}
}

func TestNodeNotReady(t *testing.T) {
	since := now.Add(-4 * time.Minute)
	nodeEvent := func(from string, first, last time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("minikube.%s.%d", from, first.Unix())}, Reason: "NodeNotReady",
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "minikube"}, Source: corev1.EventSource{Component: from},
			Message: "Node minikube status is now: NodeNotReady", FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last)}
	}
	kubeletSaid := nodeEvent("kubelet", since, since)
	answers := func(reason, message string, at time.Time, seconds int) string {
		return fmt.Sprintf("reason: %s\nmessage: %q\nnotReadySince: %q\nsecondsToNotReady: %d\n", reason, message, at.Format(time.RFC3339), seconds)
	}
	good := answers("KubeletNotReady", "container runtime is down", since, 35)
	const pleg = "[container runtime is down, PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s]"
	// node is what the node says: systemd's times for containerd (stopped zero: never stopped),
	// and the kubelet's "Node became not ready" line, at becameAt with message ("" for none).
	type node struct {
		stopped, started time.Time
		becameAt         time.Time
		message          string
	}
	stopped := node{stopped: since.Add(-35 * time.Second), started: since.Add(40 * time.Second), becameAt: since, message: "container runtime is down"}
	with := func(n node, change func(*node)) node { change(&n); return n }

	tests := []struct {
		name    string
		ready   corev1.ConditionStatus
		back    time.Time // the Ready condition's lastTransitionTime
		events  []runtime.Object
		node    node
		answers string
		want    string // "" passes
	}{
		{"the template", corev1.ConditionTrue, since.Add(-time.Hour), nil, stopped, "reason: \"\"\nmessage: \"\"\nnotReadySince: \"\"\nsecondsToNotReady: 0\n", "message, notReadySince, reason, secondsToNotReady still empty"},
		{"done", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{kubeletSaid}, stopped, good, ""},
		{"down for over three minutes", corev1.ConditionTrue, since.Add(4 * time.Minute), []runtime.Object{kubeletSaid},
			with(stopped, func(n *node) { n.stopped, n.message = since.Add(-33*time.Second), pleg }), answers("KubeletNotReady", pleg, since, 33), ""},
		{"a repeated event, first and last around it", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{nodeEvent("kubelet", since.Add(-30*time.Minute), since.Add(2*time.Second))}, stopped, good, ""},
		{"containerd still stopped", corev1.ConditionFalse, since, []runtime.Object{kubeletSaid}, stopped, good, "Ready again: minikube ssh -- sudo systemctl start containerd"},
		{"the node controller's reason", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{kubeletSaid}, stopped,
			answers("NodeStatusUnknown", "container runtime is down", since, 35), "NodeStatusUnknown is the node controller's"},
		{"the node controller's message", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{kubeletSaid}, stopped,
			answers("KubeletNotReady", "Kubelet stopped posting node status.", since, 35), "is the node controller's, when the kubelet stops posting"},
		{"words of one's own", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{kubeletSaid}, stopped,
			answers("KubeletNotReady", "containerd is stopped", since, 35), "the kubelet's own words for a runtime"},
		{"Ready since before", corev1.ConditionTrue, since.Add(-time.Hour), []runtime.Object{kubeletSaid}, stopped, good, "to have come back after notReadySince"},
		{"too fast to be the kubelet's", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{kubeletSaid}, stopped,
			answers("KubeletNotReady", "container runtime is down", since, 3), "secondsToNotReady"},
		{"not a time", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{kubeletSaid}, stopped,
			"reason: KubeletNotReady\nmessage: container runtime is down\nnotReadySince: a minute ago\nsecondsToNotReady: 35\n", "notReadySince: the Ready condition's lastTransitionTime"},
		{"only the node controller's event (exercise 4)", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{nodeEvent("node-controller", since, since)}, stopped, good, "the kubelet's NodeNotReady event at notReadySince"},
		{"the kubelet's event at another time", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{nodeEvent("kubelet", since.Add(-20*time.Minute), since.Add(-20*time.Minute))}, stopped, good, "the kubelet's NodeNotReady event at notReadySince"},
		// Did not do it: a kubelet that restarts posts NotReady, with an event, for a moment.
		{"any restart of the kubelet, and the README's words", corev1.ConditionTrue, since.Add(15 * time.Second), []runtime.Object{kubeletSaid},
			node{becameAt: since, message: "container runtime status check may not have completed yet"}, good, "containerd stopped under the running kubelet: systemd has no stop of containerd"},
		{"a restart's NotReady, containerd stopped long before", corev1.ConditionTrue, since.Add(15 * time.Second), []runtime.Object{kubeletSaid},
			with(stopped, func(n *node) {
				n.stopped, n.message = since.Add(-time.Hour), "container runtime status check may not have completed yet"
			}), good, "notReadySince (" + since.Format(time.RFC3339) + ") about half a minute after containerd's last stop"},
		{"containerd stopped, the restart's NotReady answered", corev1.ConditionTrue, since.Add(15 * time.Second), []runtime.Object{kubeletSaid},
			with(stopped, func(n *node) { n.message = "container runtime status check may not have completed yet" }), good, "the Node NotReady because its runtime stopped: the kubelet's reason then was"},
		{"no line of the kubelet at that time", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{kubeletSaid},
			with(stopped, func(n *node) { n.becameAt = since.Add(-time.Hour) }), good, `the kubelet's "Node became not ready" line at notReadySince`},
		{"the seconds guessed", corev1.ConditionTrue, since.Add(50 * time.Second), []runtime.Object{kubeletSaid},
			with(stopped, func(n *node) { n.stopped = since.Add(-70 * time.Second) }), good, "secondsToNotReady: from containerd's stop (its InactiveEnterTimestamp) to notReadySince is 70 s, not 35"},
		{"the README's words for another message", corev1.ConditionTrue, since.Add(4 * time.Minute), []runtime.Object{kubeletSaid},
			with(stopped, func(n *node) { n.message = pleg }), good, "reason and message: the kubelet's words at notReadySince"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.events...)
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "minikube"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{MachineID: machineID},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: tt.ready, LastTransitionTime: metav1.NewTime(tt.back)}}}}
			require.NoError(t, c.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, ""))
			unix := func(at time.Time) string {
				if at.IsZero() {
					return ""
				}
				return fmt.Sprintf("@%d", at.Unix())
			}
			c.node["systemctl show containerd"] = "InactiveEnterTimestamp=" + unix(tt.node.stopped) + "\nActiveEnterTimestamp=" + unix(tt.node.started) + "\n"
			if tt.node.message != "" {
				condition, err := json.Marshal(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(tt.node.becameAt),
					LastTransitionTime: metav1.NewTime(tt.node.becameAt), Reason: "KubeletNotReady", Message: tt.node.message})
				require.NoError(t, err)
				c.node["journalctl --unit kubelet"] = journalText("kubelet", tt.node.becameAt, `I1202 09:31:40.000000     512 setters.go:552] "Node became not ready" node="minikube" condition=`+string(condition))
			}
			c.answer("15-node-not-ready.yaml", tt.answers)
			expect(t, c.check(checkNodeNotReady), tt.want, tt.name)
		})
	}
}
