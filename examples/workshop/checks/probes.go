package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exercises 14 and 15: chapter 09 on minikube — a pod that runs but is not Ready, and a node
// whose runtime stopped.

// The objects of exercise 14, as examples/workshop/14-readiness-probe/dns.yaml makes them.
const (
	probesNamespace = "probes"
	probesPod       = "dns"
	probesManifest  = "examples/workshop/14-readiness-probe/dns.yaml"
	// notReady503 is the kubelet's event message while CoreDNS's /ready answers 503: the status
	// code only, never the body (pkg/probe/http/http.go#L147 (failureMsg := fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode))).
	notReady503 = "HTTP probe failed with statuscode: 503"
)

// 14. A readiness probe that fails while the container runs: the kubelet's Unhealthy events for
// this very pod (its UID), what the attendee read then, and now the pod Ready, never restarted,
// and ready in its Service's EndpointSlice.
func checkReadinessProbe(ctx context.Context, env Env) (Result, error) {
	var r Result
	pod, err := env.Client.CoreV1().Pods(probesNamespace).Get(ctx, probesPod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.missing("the Pod %s/%s: kubectl apply -f %s", probesNamespace, probesPod, probesManifest)
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("the pod %s/%s: %w", probesNamespace, probesPod, err)
	}
	if !hasReadinessProbe(pod) {
		r.missing("%s's readiness probe as %s has it (httpGet /ready on port 8181): the exercise makes it pass, not go away", probesPod, probesManifest)
		return r, nil
	}
	var a struct {
		Event          string `json:"event"`
		NotReady       string `json:"notReady"`
		EndpointBefore string `json:"endpointBefore"`
	}
	const file = "14-readiness-probe.yaml"
	if !answers(env, &r, file, &a) ||
		unfilled(&r, env, file, map[string]bool{"event": a.Event != "", "notReady": a.NotReady != "", "endpointBefore": a.EndpointBefore != ""}) {
		return r, nil
	}
	// The evidence of the not-ready time: the kubelet's events for this pod, which only the pod
	// as dns.yaml makes it, without its permissions, leaves.
	events, err := env.Client.CoreV1().Events(probesNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + probesPod + ",reason=Unhealthy"})
	if err != nil {
		return r, fmt.Errorf("the pod's events: %w", err)
	}
	refused := false
	for _, e := range events.Items {
		if e.Reason == "Unhealthy" && e.InvolvedObject.UID == pod.UID && strings.Contains(e.Message, "Readiness probe failed: "+notReady503) {
			refused = true
		}
	}
	switch answer := normalize(a.Event); {
	case !refused:
		r.missing("the kubelet's event %q for this pod %s: CoreDNS's /ready never refused it. Apply %s as it is, and watch its events (kubectl -n %s get events -w) before granting it anything", "Readiness probe failed: "+notReady503, probesPod, probesManifest, probesNamespace)
	case strings.Contains(answer, "connection refused"):
		r.missing("event: %q is from before CoreDNS listened on 8181; the event that lasts says what /ready answered", a.Event)
	case !strings.Contains(answer, notReady503):
		r.missing("event: the message of the kubelet's Unhealthy event for %s, as kubectl -n %s get events shows it (\"Readiness probe failed: …\")", probesPod, probesNamespace)
	}
	if strings.Trim(normalize(a.NotReady), `"`) != "kubernetes" {
		r.missing("notReady: the plugin CoreDNS's /ready waited for, in its log (kubectl -n %s logs %s: Plugins not ready: \"…\")", probesNamespace, probesPod)
	}
	if ip := pod.Status.PodIP; ip == "" || !strings.Contains(a.EndpointBefore, ip) || !strings.Contains(a.EndpointBefore, "false") {
		r.missing("endpointBefore: the EndpointSlice's line for %s before the fix, as the README's jsonpath prints it — its address (the pod's IP, %s) and ready=false", probesPod, ip)
	}
	if !podReady(pod) {
		r.missing("%s Ready (1/1): it is still 0/1. Its log says what CoreDNS waits for (kubectl -n %s logs %s); the ClusterRole system:coredns, bound to the ServiceAccount %s/dns, lets it read what it needs", probesPod, probesNamespace, probesPod, probesNamespace)
		return r, nil
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.RestartCount > 0 {
			r.missing("%s running since it started: container %s restarted %d times. A failing readiness probe never restarts a container — what did? (kubectl -n %s describe pod %s)", probesPod, c.Name, c.RestartCount, probesNamespace, probesPod)
		}
	}
	if ok, err := endpointReady(ctx, env, pod); err != nil {
		return r, err
	} else if !ok {
		r.missing("the Service %s's EndpointSlice to list %s as ready, as it does once the pod is Ready (kubectl -n %s get endpointslices -l %s=%s -o yaml)", probesPod, probesPod, probesNamespace, discoveryv1.LabelServiceName, probesPod)
	}
	return r, nil
}

// hasReadinessProbe says whether the pod still has dns.yaml's readiness probe.
func hasReadinessProbe(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil && p.HTTPGet.Path == "/ready" && p.HTTPGet.Port.IntValue() == 8181 {
			return true
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// endpointReady says whether the pod's Service lists it, by its UID, as a ready endpoint.
func endpointReady(ctx context.Context, env Env, pod *corev1.Pod) (bool, error) {
	slices, err := env.Client.DiscoveryV1().EndpointSlices(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + probesPod})
	if err != nil {
		return false, fmt.Errorf("the Service's EndpointSlices: %w", err)
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && e.TargetRef.UID == pod.UID && e.Conditions.Ready != nil && *e.Conditions.Ready {
				return true, nil
			}
		}
	}
	return false, nil
}

// runtimeMessages are the kubelet's words in the Node's Ready condition for a container runtime
// it cannot use: a runtime that has not answered for 30 s
// (pkg/kubelet/runtime.go#L129 (errs = append(errs, errors.New("container runtime is down")))),
// a PLEG that has not relisted for 3 minutes (pkg/kubelet/runtime.go#L131-L135 (for _, hc := range s.healthChecks {)),
// a runtime that answers but says it is not ready, or its network not (pkg/kubelet/kubelet.go#L3321-L3365 (func (kl *Kubelet) updateRuntimeUp)).
var runtimeMessages = []string{"container runtime is down", "PLEG is not healthy: ", "container runtime not ready: ", "container runtime network not ready: "}

// nodeControllerMessage is what the node controller writes when the kubelet stops posting
// (exercise 4), not the kubelet's word.
const nodeControllerMessage = "Kubelet stopped posting node status."

// 15. containerd stopped: the Node went NotReady with the kubelet's reason and message, and came
// back. The kubelet's own NodeNotReady event at the time the attendee read is the evidence (the
// node controller records none when the kubelet posts NotReady itself, only when it stops posting:
// pkg/controller/nodelifecycle/node_lifecycle_controller.go#L768 (case currentReadyCondition.Status != v1.ConditionTrue && observedReadyCondition.Status == v1.ConditionTrue:)).
func checkNodeNotReady(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Reason            string `json:"reason"`
		Message           string `json:"message"`
		NotReadySince     string `json:"notReadySince"`
		SecondsToNotReady int    `json:"secondsToNotReady"`
	}
	const file = "15-node-not-ready.yaml"
	if !answers(env, &r, file, &a) || unfilled(&r, env, file, map[string]bool{"reason": a.Reason != "", "message": a.Message != "",
		"notReadySince": a.NotReadySince != "", "secondsToNotReady": a.SecondsToNotReady != 0}) {
		return r, nil
	}
	ready := condition(n, corev1.NodeReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		r.missing("the Node %s Ready again: minikube ssh -- sudo systemctl start containerd; the kubelet posts Ready within about 15 s", n.Name)
		return r, nil
	}
	switch reason := normalize(a.Reason); reason {
	case "KubeletNotReady":
	case "NodeStatusUnknown":
		r.missing("reason: NodeStatusUnknown is the node controller's, when the kubelet stops posting (exercise 4); here the kubelet runs and posts its own reason: read it while the Node is NotReady")
	default:
		r.missing("reason: the reason of the Ready condition the kubelet posts while it is False (kubectl get node %s -o jsonpath=… while it is NotReady), not %q", n.Name, a.Reason)
	}
	message := normalize(a.Message)
	switch {
	case strings.Contains(message, nodeControllerMessage):
		r.missing("message: %q is the node controller's, when the kubelet stops posting (exercise 4); here the kubelet runs and says why it is not ready", nodeControllerMessage)
	case !slices.ContainsFunc(runtimeMessages, func(m string) bool { return strings.Contains(message, m) }):
		r.missing("message: the kubelet's own words for a runtime that does not answer, from the Node's Ready condition while it is NotReady; %q is not one of them", a.Message)
	}
	since, err := parseTime(a.NotReadySince)
	if err != nil {
		r.missing("notReadySince: the Ready condition's lastTransitionTime as kubectl printed it while the Node was NotReady (2026-12-02T09:31:40Z): %v", err)
		return r, nil
	}
	if !ready.LastTransitionTime.After(since) {
		r.missing("the Node to have come back after notReadySince (%s): its Ready condition has been True since %s — is notReadySince the time you read while it was NotReady?", a.NotReadySince, ready.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	if a.SecondsToNotReady < 20 || a.SecondsToNotReady > 600 {
		r.missing("secondsToNotReady: about how long from containerd's stop (systemctl show containerd --property=InactiveEnterTimestamp) to notReadySince; %d s cannot be — the kubelet calls the runtime down only when its last good check, every 5 s, is 30 s old", a.SecondsToNotReady)
	}
	events, err := env.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + n.Name + ",reason=NodeNotReady"})
	if err != nil {
		return r, fmt.Errorf("the node's events: %w", err)
	}
	if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
		return e.Reason == "NodeNotReady" && e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == n.Name && fromKubelet(e) && covers(e, since, 10*time.Second)
	}) {
		r.missing("the kubelet's NodeNotReady event at notReadySince (%s): none is there — stop containerd and wait for NotReady (kubectl get events -A --field-selector involvedObject.kind=Node,reason=NodeNotReady shows who said it when)", a.NotReadySince)
		return r, nil
	}

	// A kubelet that restarts posts NotReady too, for a moment, with an event of its own. What only
	// a stopped runtime leaves: systemd's record of containerd's stop and start around it, and the
	// kubelet's own line for the change, at notReadySince, in the words answered.
	out, err := nodeShell(ctx, env, n, `for p in InactiveEnterTimestamp ActiveEnterTimestamp; do t=$(systemctl show containerd --value --property=$p); [ -n "$t" ] && echo "$p=@$(date -d "$t" +%s)"; done`)
	if err != nil {
		return r, err
	}
	stopped, started := unitTimestamp(out, "InactiveEnterTimestamp"), unitTimestamp(out, "ActiveEnterTimestamp")
	switch took := since.Sub(stopped); {
	case stopped.IsZero():
		r.missing("containerd stopped under the running kubelet: systemd has no stop of containerd since the node started (minikube ssh -- sudo systemctl stop containerd)")
		return r, nil
	case took < 20*time.Second || took > 10*time.Minute:
		r.missing("notReadySince (%s) about half a minute after containerd's last stop (%s): is it the lastTransitionTime you read while containerd was stopped, the last time you stopped it?", a.NotReadySince, stopped.UTC().Format(time.RFC3339))
		return r, nil
	case (took - time.Duration(a.SecondsToNotReady)*time.Second).Abs() > 10*time.Second:
		r.missing("secondsToNotReady: from containerd's stop (its InactiveEnterTimestamp) to notReadySince is %d s, not %d", int(took.Round(time.Second).Seconds()), a.SecondsToNotReady)
	case !started.After(since):
		r.missing("containerd started again after the Node went NotReady: minikube ssh -- sudo systemctl start containerd")
	}
	lines, err := journal(ctx, env, n, "kubelet", `"Node became not ready"`)
	if err != nil {
		return r, err
	}
	var said *corev1.NodeCondition
	for _, l := range lines {
		var c corev1.NodeCondition
		if m := conditionField.FindStringSubmatch(l.message); m != nil && json.Unmarshal([]byte(m[1]), &c) == nil && c.LastTransitionTime.Time.Equal(since) {
			said = &c
		}
	}
	switch {
	case said == nil:
		r.missing("the kubelet's \"Node became not ready\" line at notReadySince (%s) in its journal (sudo journalctl -u kubelet | grep \"Node became not ready\"): is notReadySince the lastTransitionTime you read while the Node was NotReady?", a.NotReadySince)
	case !slices.ContainsFunc(runtimeMessages, func(m string) bool { return strings.Contains(said.Message, m) }):
		r.missing("the Node NotReady because its runtime stopped: the kubelet's reason then was %q", said.Message)
	case normalize(a.Message) != said.Message || normalize(a.Reason) != said.Reason:
		r.missing("reason and message: the kubelet's words at notReadySince, as the Node's Ready condition said them then (its journal's \"Node became not ready\" line has them too)")
	}
	return r, nil
}

// conditionField is the condition a kubelet log line carries, as JSON, at its end.
var conditionField = regexp.MustCompile(`condition=(\{.*\})\s*$`)

// unitTimestamp reads a systemd unit's timestamp property as the script above prints it, in Unix
// seconds ("InactiveEnterTimestamp=@1764668465"; none when the unit never entered that state).
func unitTimestamp(out, property string) time.Time {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), property+"=@"); ok {
			if sec, err := strconv.ParseInt(v, 10, 64); err == nil {
				return time.Unix(sec, 0)
			}
		}
	}
	return time.Time{}
}

// fromKubelet says whether a node's event is the kubelet's own.
func fromKubelet(e corev1.Event) bool {
	return e.Source.Component == "kubelet" || e.ReportingController == "kubelet"
}

// covers says whether an event happened at t, within slack: a repeated event keeps only its first
// and last time.
func covers(e corev1.Event, t time.Time, slack time.Duration) bool {
	first := e.FirstTimestamp.Time
	if first.IsZero() {
		first = eventTime(e)
	}
	return !t.Before(first.Add(-slack)) && !t.After(eventTime(e).Add(slack))
}
