package checks

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exercises 18 and 19: chapter 10 on minikube — what a pod's QoS class changes on the node, and
// the kubelet's eviction manager at work under a threshold set above what the node has.

// The pods of examples/workshop/18-qos-on-the-node/pods.yaml, in its namespace.
const (
	qosNamespace = "qos"
	qosManifest  = "examples/workshop/18-qos-on-the-node/pods.yaml"
)

var qosPods = []string{"besteffort", "burstable", "guaranteed"}

// qosPodsOf gets the exercise's pods; ok is false (and a missing item recorded) when one is not there.
func qosPodsOf(ctx context.Context, env Env, r *Result) (map[string]*corev1.Pod, bool, error) {
	pods := map[string]*corev1.Pod{}
	for _, name := range qosPods {
		p, err := env.Client.CoreV1().Pods(qosNamespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			r.missing("the pod %s/%s: kubectl apply -f %s", qosNamespace, name, qosManifest)
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("get pod %s/%s: %w", qosNamespace, name, err)
		}
		pods[name] = p
	}
	return pods, true, nil
}

// onNode is what the node's runtime says of a pod: its sandbox's cgroup parent as the kubelet
// sent it (RunPodSandbox's config), its running container's oom_score_adj as the kubelet set it
// in the container's spec.
type onNode struct {
	cgroup      string
	oomScoreAdj string
}

// shellSafeUID is a UID the node's shell can be given as it is.
var shellSafeUID = regexp.MustCompile(`^[0-9a-zA-Z-]+$`)

// readOnNode asks the node's crictl, as the README does, by the pods' UIDs: the pods that run
// now, not the ones of an earlier run.
func readOnNode(ctx context.Context, env Env, n *corev1.Node, pods map[string]*corev1.Pod) (map[string]onNode, error) {
	var lines []string
	for _, name := range qosPods {
		uid := string(pods[name].UID)
		if !shellSafeUID.MatchString(uid) {
			return nil, fmt.Errorf("pod %s/%s has a UID the node's shell cannot be given: %q", qosNamespace, name, uid)
		}
		lines = append(lines, fmt.Sprintf(`s=$(sudo crictl pods -q --label io.kubernetes.pod.uid=%[1]s --state ready 2>/dev/null | head -n 1); `+
			`c=$(sudo crictl ps -q --label io.kubernetes.pod.uid=%[1]s --state running 2>/dev/null | head -n 1); `+
			`echo "%[1]s ${s:+$(sudo crictl inspectp -o go-template --template '{{.info.config.linux.cgroup_parent}}' $s 2>/dev/null)} ${c:+$(sudo crictl inspect -o go-template --template '{{.info.runtimeSpec.process.oomScoreAdj}}' $c 2>/dev/null)}"`, uid))
	}
	out, err := nodeShell(ctx, env, n, strings.Join(lines, "; "))
	if err != nil {
		return nil, err
	}
	got := map[string]onNode{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 3 {
			got[f[0]] = onNode{cgroup: f[1], oomScoreAdj: f[2]}
		}
	}
	return got, nil
}

// 18. One pod of each QoS class: its class, its cgroup and its container's oom_score_adj, as the
// node has them for the pods that run now. The cgroups hold the pods' UIDs: an answer copied from
// anywhere but this node's runtime does not match.
func checkQoSOnTheNode(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	type podAnswer struct {
		QOSClass    string `json:"qosClass"`
		Cgroup      string `json:"cgroup"`
		OOMScoreAdj int    `json:"oomScoreAdj"`
	}
	var a struct {
		CgroupDriver string    `json:"cgroupDriver"`
		BestEffort   podAnswer `json:"besteffort"`
		Burstable    podAnswer `json:"burstable"`
		Guaranteed   podAnswer `json:"guaranteed"`
	}
	const file = "18-qos-on-the-node.yaml"
	if !answers(env, &r, file, &a) {
		return r, nil
	}
	answered := map[string]podAnswer{"besteffort": a.BestEffort, "burstable": a.Burstable, "guaranteed": a.Guaranteed}
	filled := map[string]bool{"cgroupDriver": a.CgroupDriver != ""}
	for name, p := range answered {
		filled[name+".qosClass"], filled[name+".cgroup"], filled[name+".oomScoreAdj"] = p.QOSClass != "", p.Cgroup != "", p.OOMScoreAdj != 0
	}
	if unfilled(&r, env, file, filled) {
		return r, nil
	}
	var cz struct {
		KubeletConfig struct {
			CgroupDriver string `json:"cgroupDriver"`
		} `json:"kubeletconfig"`
	}
	if err := configz(ctx, env, n.Name, &cz); err != nil {
		return r, err
	}
	if normalize(a.CgroupDriver) != cz.KubeletConfig.CgroupDriver {
		r.missing("cgroupDriver: the kubelet's /configz says %q, not %q", cz.KubeletConfig.CgroupDriver, a.CgroupDriver)
	}
	pods, ok, err := qosPodsOf(ctx, env, &r)
	if !ok || err != nil {
		return r, err
	}
	for _, name := range qosPods {
		if pods[name].Status.Phase != corev1.PodRunning {
			r.missing("the pod %s/%s running (it is %s): its cgroup and its container are on the node only while it runs — kubectl delete namespace %s, then apply %s again", qosNamespace, name, pods[name].Status.Phase, qosNamespace, qosManifest)
		}
	}
	if !r.Passed() {
		return r, nil
	}
	got, err := readOnNode(ctx, env, n, pods)
	if err != nil {
		return r, err
	}
	for _, name := range qosPods {
		p, answer := pods[name], answered[name]
		if normalize(answer.QOSClass) != string(p.Status.QOSClass) {
			r.missing("%s.qosClass: the pod's status says %s (its QOS column), not %q", name, p.Status.QOSClass, answer.QOSClass)
		}
		there, ok := got[string(p.UID)]
		if !ok {
			r.missing("the node's runtime to show the pod %s/%s (UID %s): crictl on the node found no ready sandbox and running container of it", qosNamespace, name, p.UID)
			continue
		}
		if normalize(answer.Cgroup) != there.cgroup {
			r.missing("%s.cgroup: the cgroup_parent the kubelet gave the pod's sandbox is %s, not %q (sudo crictl inspectp on the node)", name, there.cgroup, answer.Cgroup)
		}
		if strconv.Itoa(answer.OOMScoreAdj) != there.oomScoreAdj {
			r.missing("%s.oomScoreAdj: the container's spec says %s, not %d (sudo crictl inspect on the node: info.runtimeSpec.process.oomScoreAdj)", name, there.oomScoreAdj, answer.OOMScoreAdj)
		}
	}
	return r, nil
}

// The kubelet's words for an eviction and for the condition behind it: the message of an
// eviction for a resource (pkg/kubelet/eviction/helpers.go#L46 (nodeLowMessageFmt = "The node was low on resource: %v. ")),
// its threshold quantity (pkg/kubelet/eviction/helpers.go#L74 (thresholdMetMessageFmt = "Threshold quantity: %v, available: %v. "))
// and the DisruptionTarget reason it sets (pkg/kubelet/eviction/eviction_manager.go#L444 (Reason:             v1.PodReasonTerminationByKubelet,));
// its journal line for each pod it evicted (pkg/kubelet/eviction/eviction_manager.go#L658 (logger.Info("Eviction manager: pod is evicted successfully", "pod", klog.KObj(pod)))).
var (
	thresholdQuantity = regexp.MustCompile(`Threshold quantity: ([^,\s]+),`)
	evictedLine       = regexp.MustCompile(`"Eviction manager: pod is evicted successfully" pod="([^"]+)"`)
)

const (
	memoryPressureReason = "KubeletHasInsufficientMemory"
	memoryPressureEvent  = "NodeHasInsufficientMemory"
)

// 19. A threshold above what the node has: the kubelet's eviction manager evicts the pods of
// exercise 18 in its own order. The evidence: the DisruptionTarget condition it sets on the pods it
// chose, with the threshold it compared; its journal's line for each, in order; its Evicted event for
// the BestEffort pod; the Node's event when the condition went True — all after the pods were made.
func checkEviction(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Threshold    string `json:"threshold"`
		EvictedFirst string `json:"evictedFirst"`
		BestEffort   string `json:"besteffort"`
		Pressure     string `json:"pressure"`
	}
	const file = "19-eviction.yaml"
	if !answers(env, &r, file, &a) || unfilled(&r, env, file, map[string]bool{"threshold": a.Threshold != "", "evictedFirst": a.EvictedFirst != "",
		"besteffort": a.BestEffort != "", "pressure": a.Pressure != ""}) {
		return r, nil
	}
	pods, ok, err := qosPodsOf(ctx, env, &r)
	if !ok || err != nil {
		return r, err
	}
	made := pods[qosPods[0]].CreationTimestamp.Time
	for _, p := range pods {
		if p.CreationTimestamp.After(made) {
			made = p.CreationTimestamp.Time
		}
	}

	// The two the eviction manager ranked and evicted: its condition on each, with the threshold.
	for _, name := range []string{"burstable", "guaranteed"} {
		c := podCondition(pods[name], corev1.DisruptionTarget)
		if c == nil || c.Status != corev1.ConditionTrue || c.Reason != corev1.PodReasonTerminationByKubelet {
			r.missing("the pod %s/%s evicted by the kubelet: it has no DisruptionTarget condition of the kubelet's (reason %s) — set the threshold with minikube start --extra-config, restart the kubelet, and wait (kubectl -n %s wait --for=condition=DisruptionTarget pod/%s)", qosNamespace, name, corev1.PodReasonTerminationByKubelet, qosNamespace, name)
			continue
		}
		switch m := thresholdQuantity.FindStringSubmatch(c.Message); {
		case m == nil:
			r.missing("the pod %s/%s evicted for memory: the kubelet's condition names no threshold (%q)", qosNamespace, name, c.Message)
		case normalize(a.Threshold) != m[1]:
			r.missing("threshold: the kubelet evicted %s under a threshold of %s (its message: %q), not %q", name, m[1], c.Message, a.Threshold)
		}
	}
	if !r.Passed() {
		return r, nil
	}

	// Its order, from its journal: the last line for each pod since the pods were made.
	lines, err := journal(ctx, env, n, "kubelet", `"Eviction manager: pod is evicted successfully"`)
	if err != nil {
		return r, err
	}
	evictedAt := map[string]time.Time{}
	for _, l := range lines {
		if m := evictedLine.FindStringSubmatch(l.message); m != nil && !l.time.Before(made.Add(-time.Second)) {
			evictedAt[m[1]] = l.time
		}
	}
	at := func(name string) time.Time { return evictedAt[qosNamespace+"/"+name] }
	switch b, g := at("burstable"), at("guaranteed"); {
	case b.IsZero() || g.IsZero():
		r.missing("the kubelet's journal lines for both evictions since the pods were made (sudo journalctl -u kubelet | grep \"evicted successfully\"): the node has %d of them", len(evictedAt))
	case normalize(a.EvictedFirst) != "burstable" && normalize(a.EvictedFirst) != "guaranteed":
		r.missing("evictedFirst: burstable or guaranteed, the one the kubelet evicted first, not %q", a.EvictedFirst)
	case (normalize(a.EvictedFirst) == "guaranteed") != g.Before(b):
		r.missing("evictedFirst: the kubelet's journal says otherwise — read its lines \"pod is evicted successfully\" in order")
	}

	// The BestEffort pod: refused at admission or evicted, the kubelet's event says which.
	events, err := env.Client.CoreV1().Events(qosNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=besteffort,reason=Evicted"})
	if err != nil {
		return r, fmt.Errorf("the events of %s/besteffort: %w", qosNamespace, err)
	}
	var said []string
	for _, e := range events.Items {
		if e.InvolvedObject.UID == pods["besteffort"].UID && e.Reason == "Evicted" && fromKubelet(e) {
			said = append(said, strings.TrimSpace(e.Message))
		}
	}
	switch {
	case len(said) == 0:
		r.missing("the kubelet's Evicted event for %s/besteffort (kubectl -n %s get events --field-selector involvedObject.name=besteffort,reason=Evicted): none for the pod of this run (its UID)", qosNamespace, qosNamespace)
	case !slices.Contains(said, strings.TrimSpace(normalize(a.BestEffort))):
		r.missing("besteffort: the message of the kubelet's Evicted event for the BestEffort pod, whole: %q is not it", a.BestEffort)
	}

	// The Node's condition: the kubelet's event when MemoryPressure went True, after the pods were made.
	nodeEvents, err := env.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + n.Name + ",reason=" + memoryPressureEvent})
	if err != nil {
		return r, fmt.Errorf("the node's events: %w", err)
	}
	if !slices.ContainsFunc(nodeEvents.Items, func(e corev1.Event) bool {
		return e.Reason == memoryPressureEvent && fromKubelet(e) && !eventTime(e).Before(made.Add(-time.Second))
	}) {
		r.missing("the kubelet's %s event for the Node since the pods were made: the Node's MemoryPressure condition did not go True", memoryPressureEvent)
	}
	if normalize(a.Pressure) != memoryPressureReason {
		r.missing("pressure: the reason of the Node's MemoryPressure condition while it was True, not %q", a.Pressure)
	}
	return r, nil
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// The kubelet's words for a container it waits to start again: its error, which the pod worker
// logs at every sync that meets the wait
// (pkg/kubelet/kuberuntime/kuberuntime_manager.go#L2102 (err := fmt.Errorf("back-off %s restarting failed container=%s pod=%s", backoff, container.Name, format.Pod(pod))),
// pkg/kubelet/pod_workers.go#L1338 (logger.Error(err, "Error syncing pod, skipping", "pod", podRef, "podUID", podUID))),
// and its BackOff event.
var backOffLine = regexp.MustCompile(`back-off (\S+) restarting failed container=pause pod=crashloop_crashloop\(([0-9a-f-]+)\)`)

// 20. A container that exits 0, restarted with a back-off: the waits the kubelet's journal gives
// for the pod that runs now, in order, and its BackOff event for that pod.
func checkCrashLoop(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		BackOffs []string `json:"backOffs"`
		Event    string   `json:"event"`
	}
	const file = "20-crashloop.yaml"
	if !answers(env, &r, file, &a) || unfilled(&r, env, file, map[string]bool{"backOffs": len(a.BackOffs) > 0, "event": a.Event != ""}) {
		return r, nil
	}
	pod, err := env.Client.CoreV1().Pods("crashloop").Get(ctx, "crashloop", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.missing("the pod crashloop/crashloop: kubectl apply -f examples/workshop/20-crashloop/crashloop.yaml")
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("get pod crashloop/crashloop: %w", err)
	}
	restarts := int32(0)
	for _, c := range pod.Status.ContainerStatuses {
		restarts = max(restarts, c.RestartCount)
	}
	if restarts < 3 {
		r.missing("the pod's container restarted 3 times at least (RESTARTS says %d): watch it, kubectl -n crashloop get pod crashloop -w", restarts)
		return r, nil
	}

	lines, err := journal(ctx, env, n, "kubelet", "restarting failed container=pause pod=crashloop_crashloop(")
	if err != nil {
		return r, err
	}
	var waits []string
	for _, l := range lines {
		if m := backOffLine.FindStringSubmatch(strings.ReplaceAll(l.message, `\"`, `"`)); m != nil && m[2] == string(pod.UID) &&
			(len(waits) == 0 || waits[len(waits)-1] != m[1]) {
			waits = append(waits, m[1])
		}
	}
	var answered []string
	for _, w := range a.BackOffs {
		answered = append(answered, normalize(w))
	}
	switch {
	case len(waits) < 3:
		r.missing("the kubelet's journal to give three waits for the pod that runs now (UID %s); it gives %v", pod.UID, waits)
	case len(answered) < 3:
		r.missing("backOffs: the first three waits at least, in order, as the journal gives them")
	case len(answered) > len(waits) || !slices.Equal(answered, waits[:len(answered)]):
		r.missing("backOffs: the kubelet's journal gives %v for the pod that runs now, not %v", waits, a.BackOffs)
	}

	events, err := env.Client.CoreV1().Events("crashloop").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=crashloop,reason=BackOff"})
	if err != nil {
		return r, fmt.Errorf("the events of crashloop/crashloop: %w", err)
	}
	if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.UID == pod.UID && e.Reason == "BackOff" && fromKubelet(e) && strings.TrimSpace(e.Message) == normalize(a.Event)
	}) {
		r.missing("event: the message of the kubelet's BackOff event for the pod that runs now, whole (kubectl -n crashloop get events --field-selector reason=BackOff)")
	}
	return r, nil
}
