package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
)

// Exercises 1–6: the node's static pods, and the kubelet as a service of the node.

// configz reads the kubelet's /configz through the apiserver's node proxy.
func configz(ctx context.Context, env Env, nodeName string, v any) error {
	raw, err := env.raw(ctx, "/api/v1/nodes/"+nodeName+"/proxy/configz")
	if err != nil {
		return fmt.Errorf("the kubelet's /configz through the node proxy: %w", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode /configz: %w", err)
	}
	return nil
}

// 1. staticPodPath from the kubelet's /configz, and the mirror pods of the control plane.
func checkFindStaticPods(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		StaticPodPath string   `json:"staticPodPath"`
		MirrorPods    []string `json:"mirrorPods"`
	}
	if !answers(env, &r, "01-static-pods.yaml", &a) ||
		unfilled(&r, env, "01-static-pods.yaml", map[string]bool{"staticPodPath": a.StaticPodPath != "", "mirrorPods": len(a.MirrorPods) > 0}) {
		return r, nil
	}
	var cz struct {
		KubeletConfig struct {
			StaticPodPath string `json:"staticPodPath"`
		} `json:"kubeletconfig"`
	}
	if err := configz(ctx, env, n.Name, &cz); err != nil {
		return r, err
	}
	if normalize(a.StaticPodPath) != normalize(cz.KubeletConfig.StaticPodPath) {
		r.missing("staticPodPath: you wrote %q; the kubelet's /configz says otherwise (kubectl get --raw /api/v1/nodes/%s/proxy/configz | jq .kubeletconfig.staticPodPath)", a.StaticPodPath, n.Name)
	}
	mirrors, err := mirrorPods(ctx, env, n.Name)
	if err != nil {
		return r, err
	}
	// namespace/name, or the bare name when it is unique among the node's pods.
	got := map[string]bool{}
	for _, m := range a.MirrorPods {
		m = normalize(m)
		if !strings.Contains(m, "/") {
			for _, full := range slices.Sorted(maps.Keys(mirrors)) {
				if strings.HasSuffix(full, "/"+m) {
					m = full
				}
			}
		}
		got[m] = true
	}
	for _, m := range slices.Sorted(maps.Keys(mirrors)) {
		if !got[m] {
			r.missing("mirror pod %s in mirrorPods: it has the kubernetes.io/config.mirror annotation (the MIRROR column)", m)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(got)) {
		if _, ok := mirrors[m]; !ok {
			r.missing("%s out of mirrorPods: it is not a mirror pod on %s — its MIRROR column says <none>: the apiserver made it, not a manifest", m, n.Name)
		}
	}
	return r, nil
}

// The static pod of exercise 2, as the README copies it into the node.
const (
	workshopManifest     = "examples/workshop/02-add-static-pod/workshop-pod.yaml"
	workshopManifestNode = "/etc/kubernetes/manifests/workshop-pod.yaml"
)

// 2. A static pod of one's own: its hash before the edit (only the unedited file has it), the
// edited mirror, and the mirror pod the kubelet made again after its deletion.
func checkAddStaticPod(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	mirrors, err := mirrorPods(ctx, env, n.Name)
	if err != nil {
		return r, err
	}
	name := "default/workshop-pod-" + n.Name
	p, ok := mirrors[name]
	switch {
	case !ok:
		r.missing("the mirror pod %s: copy workshop-pod.yaml to %s (minikube cp), and leave it there until this check passes", name, workshopManifestNode)
		return r, nil
	case p.Labels["version"] != "v2":
		r.missing("the edit: the label version: v2 in the manifest on the node (the README's sed); the mirror pod has labels %v", p.Labels)
	}
	var a struct {
		HashBefore      string `json:"hashBefore"`
		HashAfter       string `json:"hashAfter"`
		MirrorUIDBefore string `json:"mirrorUIDBefore"`
		MirrorUIDAfter  string `json:"mirrorUIDAfter"`
	}
	if !answers(env, &r, "02-static-pod.yaml", &a) || unfilled(&r, env, "02-static-pod.yaml", map[string]bool{
		"hashBefore": a.HashBefore != "", "hashAfter": a.HashAfter != "", "mirrorUIDBefore": a.MirrorUIDBefore != "", "mirrorUIDAfter": a.MirrorUIDAfter != ""}) {
		return r, nil
	}
	// The kubelet's UID of a file's pod hashes the pod, the node's name and the file's path
	// (chapter 06): the unedited manifest at the README's path has exactly one.
	data, err := os.ReadFile(filepath.Join(env.Root, workshopManifest))
	if err != nil {
		return r, err
	}
	original, err := staticpods.Decode(data, workshopManifestNode, types.NodeName(n.Name))
	if err != nil {
		return r, fmt.Errorf("%s: %w", workshopManifest, err)
	}
	hash := p.Annotations["kubernetes.io/config.hash"]
	switch {
	case normalize(a.HashBefore) != string(original.UID):
		r.missing("hashBefore: the kubernetes.io/config.hash of workshop-pod-%s before your edit — the manifest as the README has it, at %s, hashes to %s; you wrote %q", n.Name, workshopManifestNode, original.UID, a.HashBefore)
	case normalize(a.HashAfter) != hash:
		r.missing("hashAfter: the kubernetes.io/config.hash of the edited pod (kubectl get pod workshop-pod-%s -o jsonpath='{.metadata.annotations.kubernetes\\.io/config\\.hash}')", n.Name)
	case a.HashBefore == a.HashAfter:
		r.missing("two different hashes: an edit is a new pod to the kubelet (a REMOVE and an ADD), with a new UID")
	}
	switch {
	case normalize(a.MirrorUIDAfter) != string(p.UID):
		r.missing("mirrorUIDAfter: the metadata.uid of the mirror pod the kubelet made after you deleted one (now %s); did you delete it, and wait for it to come back?", p.UID)
		return r, nil
	case a.MirrorUIDBefore == a.MirrorUIDAfter:
		r.missing("mirrorUIDBefore: the metadata.uid of the mirror pod before you deleted it — the apiserver gives every new object a new UID, the recreated mirror too")
		return r, nil
	}
	// The deletion. A mirror the kubelet makes for an edit is made before the edited pod's
	// container starts (SyncPod makes the mirror, then starts the containers); one it makes again
	// after a deletion comes at the static pod's next sync, while the container runs on.
	started, ok := containerStarted(p)
	switch {
	case !ok:
		r.missing("the mirror pod %s running: its status shows no running container yet (kubectl get pods -w)", name)
		return r, nil
	case !p.CreationTimestamp.After(started.Add(recreatedAfter)):
		r.missing("the mirror pod deleted, and made again: %s was made with its container (at %s), not after it — delete it (kubectl delete pod workshop-pod-%s --wait=false) and wait for it to come back", name, started.UTC().Format(time.RFC3339), n.Name)
		return r, nil
	}
	// And the mirror deleted was the one answered: the kubelet says whose UID it deletes.
	lines, err := journal(ctx, env, n, "kubelet", `"Trying to delete pod" pod="`+name+`"`)
	if err != nil {
		return r, err
	}
	if !slices.ContainsFunc(lines, func(l journalLine) bool {
		return strings.Contains(l.message, `podUID="`+normalize(a.MirrorUIDBefore)+`"`)
	}) {
		r.missing("mirrorUIDBefore: the kubelet never deleted a mirror pod %s with UID %q (its journal says \"Trying to delete pod\" for each one it deletes): the UID of the mirror pod you deleted, read before you deleted it", name, a.MirrorUIDBefore)
	}
	return r, nil
}

// recreatedAfter is how long after its container started a mirror pod must have been made to
// have been made again: the kubelet makes it again at the static pod's next sync, about a
// minute after the deletion, and an edit's mirror comes before the container.
const recreatedAfter = 10 * time.Second

// containerStarted is when a pod's first container started running.
func containerStarted(p corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.State.Running.StartedAt.Time, true
		}
	}
	return time.Time{}, false
}

// brokenManifestNode is where exercise 3's README copies its manifest.
const brokenManifestNode = "/etc/kubernetes/manifests/workshop-broken.yaml"

// 3. A broken manifest is skipped, and the attendee found the kubelet's reason.
func checkBrokenManifest(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	manifest := filepath.Join(env.Root, "examples/workshop/03-broken-manifest/workshop-broken.yaml")
	_, reason := staticpods.ReadManifest(manifest, types.NodeName(n.Name))
	if reason == nil {
		return r, fmt.Errorf("%s is not broken", manifest)
	}
	mirrors, err := mirrorPods(ctx, env, n.Name)
	if err != nil {
		return r, err
	}
	if _, ok := mirrors["default/workshop-broken-"+n.Name]; ok {
		r.missing("workshop-broken to be refused — it has a mirror pod, so the manifest on the node is not the broken one")
	}
	// The evidence: the kubelet's own refusal of that file, in its journal (the file source
	// makes no event, only this line, every time it reads the directory).
	lines, err := journal(ctx, env, n, "kubelet", `path="`+brokenManifestNode+`"`)
	if err != nil {
		return r, err
	}
	if !slices.ContainsFunc(lines, func(l journalLine) bool {
		return strings.Contains(l.message, `"Could not process manifest file"`) && strings.Contains(l.message, reason.Error()) &&
			strings.Contains(l.message, `path="`+brokenManifestNode+`"`)
	}) {
		r.missing("the kubelet's refusal of %s in its journal: it never read the broken manifest there — copy it with minikube cp as the README says, and wait for the kubelet's next read (every 20 s)", brokenManifestNode)
	}
	path := filepath.Join(env.Answers, "03-reason.txt")
	answer, err := os.ReadFile(path)
	// journald shows the kubelet's structured err="…" with its quotes escaped: either form is right.
	said := strings.ReplaceAll(string(answer), `\"`, `"`)
	switch {
	case err != nil:
		r.missing("the kubelet's reason in %s: find it in the kubelet's log (minikube ssh -- 'sudo journalctl -u kubelet -f | grep workshop-broken')", path)
	case !strings.Contains(said, reason.Error()):
		r.missing("the kubelet's own words in 03-reason.txt — the err=\"…\" of its \"Could not process manifest file\" line; chapter 06's toy says the same: go run ./chapters/06-static-pods load --manifests examples/workshop/03-broken-manifest")
	}
	return r, nil
}

// kubeletConfigError is what the kubelet says of the configuration file exercise 4 breaks: the
// YAML decoder's reason, which only its log has (with the line number of this node's file).
var kubeletConfigError = regexp.MustCompile(`yaml: line \d+: could not find expected ':'`)

// nodeNotReadyMessage is the message of a NodeNotReady event, the node controller's and the
// kubelet's alike (pkg/controller/nodelifecycle/node_lifecycle_controller.go, nodeutil.RecordNodeStatusChange).
func nodeNotReadyMessage(node string) string { return "Node " + node + " status is now: NodeNotReady" }

// leaseToFailure bounds how long before the kubelet's first failure its Lease was last renewed:
// it renews it every 10 s while it runs.
const leaseToFailure = 20 * time.Second

// 4. The kubelet that will not start: its own reason, in its journal for this node's file; the
// Lease that stopped being renewed when it stopped; the node controller's NodeNotReady after it
// (the kubelet's own, when it restarts, is no evidence of a kubelet that would not start); and
// the Node Ready again.
func checkKubeletWillNotStart(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Error          string `json:"error"`
		LeaseRenewTime string `json:"leaseRenewTime"`
	}
	if !answers(env, &r, "04-kubelet-will-not-start.yaml", &a) ||
		unfilled(&r, env, "04-kubelet-will-not-start.yaml", map[string]bool{"error": a.Error != "", "leaseRenewTime": a.LeaseRenewTime != ""}) {
		return r, nil
	}
	frozen, err := parseTime(a.LeaseRenewTime)
	if err != nil {
		r.missing("leaseRenewTime: the Lease's spec.renewTime as kubectl printed it (2026-11-30T19:28:46.343893Z): %v", err)
		return r, nil
	}
	ready := condition(n, corev1.NodeReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		r.missing("the kubelet running again: the Node is not Ready (fix /var/lib/kubelet/config.yaml; systemd starts the kubelet again by itself)")
		return r, nil
	}
	lease, err := env.Client.CoordinationV1().Leases("kube-node-lease").Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return r, fmt.Errorf("the node's Lease: %w", err)
	}
	if lease.Spec.RenewTime == nil || env.now().Sub(lease.Spec.RenewTime.Time) > time.Minute {
		r.missing("the Lease kube-node-lease/%s renewed again: the kubelet renews it every 10 s while it runs", n.Name)
	}

	// The kubelet that would not start said why, each time systemd started it: the first of
	// those lines after the Lease's last renewal is the break the answers are about.
	lines, err := journal(ctx, env, n, "kubelet", `"command failed"`)
	if err != nil {
		return r, err
	}
	var failed *journalLine
	for i, l := range lines {
		if kubeletConfigError.MatchString(l.message) && !l.time.Before(frozen) {
			failed = &lines[i]
			break
		}
	}
	switch {
	case failed == nil:
		r.missing("the kubelet's \"command failed\" line in its journal after the Lease's renewTime you wrote (%s): the kubelet never failed on its configuration file then — break it as the README says, restart the kubelet, and read the Lease while it is down", a.LeaseRenewTime)
		return r, nil
	case failed.time.Sub(frozen) > leaseToFailure:
		r.missing("leaseRenewTime: the Lease's renewTime while the kubelet was down — the kubelet renews it every 10 s until it stops, and it stopped %s after %s: read the Lease again while it is down", failed.time.Sub(frozen).Round(time.Second), a.LeaseRenewTime)
	}
	if said := kubeletConfigError.FindString(failed.message); !strings.Contains(a.Error, said) {
		r.missing("error: the kubelet's own words for why it exits, from its journal (sudo journalctl -u kubelet): its \"command failed\" line says which file and which line of this node's file")
	}

	// The node controller noticed the silence: its NodeNotReady, after the Lease stopped.
	events, err := env.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + n.Name + ",reason=NodeNotReady"})
	if err != nil {
		return r, fmt.Errorf("the node's events: %w", err)
	}
	var noticed *corev1.Event
	for i, e := range events.Items {
		if fromNodeController(e) && e.Message == nodeNotReadyMessage(n.Name) && eventTime(e).After(frozen) {
			noticed = &events.Items[i]
		}
	}
	switch {
	case noticed == nil:
		r.missing("the node controller's NodeNotReady event after the Lease stopped at %s (kubectl get events -A --field-selector involvedObject.kind=Node,reason=NodeNotReady -o custom-columns=LAST:.lastTimestamp,FROM:.source.component): keep the kubelet down until kubectl get node %s -w says NotReady (about 50 s)", a.LeaseRenewTime, n.Name)
	case !ready.LastTransitionTime.After(eventTime(*noticed)):
		r.missing("the Node Ready again after it went NotReady at %s: fix /var/lib/kubelet/config.yaml", eventTime(*noticed).UTC().Format(time.RFC3339))
	}
	return r, nil
}

// fromNodeController says whether a node's event is the node lifecycle controller's.
func fromNodeController(e corev1.Event) bool {
	return e.Source.Component == "node-controller" || e.ReportingController == "node-controller"
}

// 5. A kubelet setting changed in its configuration file, in effect after a restart: /configz
// says so, and the journal shows a line only that verbosity prints.
func checkKubeletSetting(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Verbosity int    `json:"verbosity"`
		LogLine   string `json:"logLine"`
	}
	if !answers(env, &r, "05-kubelet-setting.yaml", &a) ||
		unfilled(&r, env, "05-kubelet-setting.yaml", map[string]bool{"verbosity": a.Verbosity != 0, "logLine": a.LogLine != ""}) {
		return r, nil
	}
	var cz struct {
		KubeletConfig struct {
			Logging struct {
				Verbosity int `json:"verbosity"`
			} `json:"logging"`
		} `json:"kubeletconfig"`
	}
	if err := configz(ctx, env, n.Name, &cz); err != nil {
		return r, err
	}
	running := cz.KubeletConfig.Logging.Verbosity
	switch {
	case running < 2:
		r.missing("the kubelet running with a higher verbosity: its /configz says logging.verbosity %d — the kubelet reads its configuration file only when it starts (edit it, then sudo systemctl restart kubelet; restore it after this check)", running)
	case a.Verbosity != running:
		r.missing("verbosity: the value /configz shows (%d), not the file's", running)
	}
	klogLine := klogHeader.FindString(a.LogLine)
	if !verboseLine.MatchString(a.LogLine) || klogLine == "" {
		r.missing("logLine: a line of the kubelet's journal that only verbosity 2 or more prints (a klog line such as \"SyncPod enter\", at -v=4)")
		return r, nil
	}
	// The line is the kubelet's: its journal has it, word for word (its header names the
	// microsecond it was written).
	lines, err := journal(ctx, env, n, "kubelet", klogLine)
	if err != nil {
		return r, err
	}
	said := strings.TrimSpace(a.LogLine[strings.Index(a.LogLine, klogLine):])
	if !slices.ContainsFunc(lines, func(l journalLine) bool { return strings.TrimSpace(l.message) == said }) {
		r.missing("logLine: a line of this kubelet's journal, copied whole — the journal has no line %q", said)
	}
	return r, nil
}

// klogHeader is the start of a klog line: severity, date, time to the microsecond.
var klogHeader = regexp.MustCompile(`[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}`)

// verboseLine is a kubelet log line that verbosity 0 does not print: an info line with a
// message the kubelet logs at V(2) or more — "SyncPod enter" and "exit" at 4
// (pkg/kubelet/kubelet.go#L2053-L2329 (func (kl *Kubelet) SyncPod)), the SyncLoop lines at 2 to 4
// (pkg/kubelet/kubelet.go#L2746-L2866 (func (kl *Kubelet) syncLoopIteration)), component-base's
// FLAG: lines at 1 and 2.
var verboseLine = regexp.MustCompile(`I\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\] .*("SyncPod (enter|exit)"|"SyncLoop (\(SYNC\)|ADD|UPDATE|\(PLEG\))|"SyncTerminat|FLAG: --)`)

// 6. An apiserver whose manifest was broken, diagnosed with crictl and the kubelet's journal
// while kubectl could not answer, and repaired.
func checkCrictlAndAPIServer(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Error           string `json:"error"`
		ExitedContainer string `json:"exitedContainer"`
	}
	if !answers(env, &r, "06-crictl-and-apiserver.yaml", &a) ||
		unfilled(&r, env, "06-crictl-and-apiserver.yaml", map[string]bool{"error": a.Error != "", "exitedContainer": a.ExitedContainer != ""}) {
		return r, nil
	}
	if !strings.Contains(a.Error, "unknown flag: --authorisation-mode") {
		r.missing("error: what the exited kube-apiserver container printed (sudo crictl logs <its ID>): one line, the flag it did not know")
	}
	id := strings.ToLower(normalize(a.ExitedContainer))
	if !regexp.MustCompile(`^[0-9a-f]{12,64}$`).MatchString(id) {
		r.missing("exitedContainer: the CONTAINER column of an Exited kube-apiserver in sudo crictl ps -a --name kube-apiserver (12 or more hex digits)")
	}
	// The kubelet's own view of its pods (its /pods, through the node proxy): right after the
	// repair, the apiserver still holds the statuses the kubelet last sent before the break.
	raw, err := env.raw(ctx, "/api/v1/nodes/"+n.Name+"/proxy/pods")
	if err != nil {
		return r, fmt.Errorf("the kubelet's /pods through the node proxy: %w", err)
	}
	var pods corev1.PodList
	if err := json.Unmarshal(raw, &pods); err != nil {
		return r, fmt.Errorf("the kubelet's /pods: %w", err)
	}
	var apiserver corev1.Pod
	for _, p := range pods.Items {
		if p.Namespace+"/"+p.Name == "kube-system/kube-apiserver-"+n.Name {
			apiserver = p
		}
	}
	running, _ := runningSince(apiserver, "kube-apiserver")
	switch {
	case !running:
		r.missing("kube-apiserver running again: undo the change to /etc/kubernetes/manifests/kube-apiserver.yaml")
		return r, nil
	case strings.HasPrefix(strings.TrimPrefix(apiserver.Status.ContainerStatuses[0].ContainerID, "containerd://"), id):
		r.missing("exitedContainer: %s is the kube-apiserver that runs now; the one that exited has another ID (crictl ps -a lists both)", a.ExitedContainer)
		return r, nil
	}
	// The evidence of the break: the exited container's own log, which the kubelet keeps on the
	// node until it removes the container (a minute or two after the repair), read through the
	// node proxy's /logs; after that, containerd's journal, which names the container's sandbox
	// and the sandbox's pod, and the kubelet's BackOff event for that pod (another pod UID than
	// the repaired one: the manifest's hash names a static pod).
	logs, err := env.raw(ctx, "/api/v1/nodes/"+n.Name+"/proxy/logs/containers/")
	if err != nil {
		return r, fmt.Errorf("the node's container logs through the node proxy: %w", err)
	}
	prefix := "kube-apiserver-" + n.Name + "_kube-system_kube-apiserver-" + id
	if file := regexp.MustCompile(regexp.QuoteMeta(prefix) + `[0-9a-f]*\.log`).FindString(string(logs)); file != "" {
		log, err := env.raw(ctx, "/api/v1/nodes/"+n.Name+"/proxy/logs/containers/"+file)
		if err != nil {
			return r, fmt.Errorf("the exited container's log %s: %w", file, err)
		}
		if !strings.Contains(string(log), "unknown flag: --authorisation-mode") {
			r.missing("exitedContainer: the log of container %s does not say \"unknown flag: --authorisation-mode\": is it the kube-apiserver that exited?", a.ExitedContainer)
		}
		return r, nil
	}
	pod, err := containerdPodOf(ctx, env, n, id, "kube-apiserver")
	if err != nil {
		return r, err
	}
	if pod == "" {
		r.missing("exitedContainer: containerd never made a kube-apiserver container %s on %s (its journal names each one it makes): the CONTAINER column of an Exited kube-apiserver in sudo crictl ps -a", a.ExitedContainer, n.Name)
		return r, nil
	}
	events, err := env.Client.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return r, fmt.Errorf("kube-system's events: %w", err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == "kube-apiserver-"+n.Name && e.Reason == "BackOff" && string(e.InvolvedObject.UID) == pod && pod != string(apiserver.UID) &&
			strings.Contains(e.Message, "restarting failed container kube-apiserver") {
			return r, nil // its log is gone; the kubelet's event shows that its pod crash-looped
		}
	}
	r.missing("kube-apiserver to have been broken and repaired: neither container %s's log on the node (%s…) nor the kubelet's BackOff event for its pod (UID %s) shows it crash-looping — break its manifest as the README says; after the repair, wait for the event (kubectl -n kube-system get events --field-selector reason=BackOff -w)", a.ExitedContainer, prefix, pod)
	return r, nil
}

// containerdPodOf reads containerd's journal on the node for the container whose ID starts with
// id, named name: the UID of the pod whose sandbox it was made in ("" when containerd made no
// such container). containerd logs each sandbox and container it makes, at info:
// "RunPodSandbox for <metadata> returns sandbox id" and "CreateContainer within sandbox … for
// <metadata> returns container id" (its CRI service's instrumentation); the metadata prints as
// the CRI API's types print: &ContainerMetadata{Name:…,} (containerd 1) or name:"…" (2).
func containerdPodOf(ctx context.Context, env Env, n *corev1.Node, id, name string) (string, error) {
	lines, err := journal(ctx, env, n, "containerd", "returns sandbox id", "returns container id")
	if err != nil {
		return "", err
	}
	unescape := strings.NewReplacer(`\"`, `"`)
	sandbox := ""
	for _, l := range lines {
		m := unescape.Replace(l.message)
		if c := createdContainer.FindStringSubmatch(m); c != nil && strings.HasPrefix(c[3], id) && metadataName(c[2]) == name {
			sandbox = c[1]
		}
	}
	if sandbox == "" {
		return "", nil
	}
	for _, l := range lines {
		m := unescape.Replace(l.message)
		if s := ranSandbox.FindStringSubmatch(m); s != nil && s[2] == sandbox {
			if uid := metadataUID.FindStringSubmatch(s[1]); uid != nil {
				return uid[1], nil
			}
		}
	}
	return "", nil
}

var (
	createdContainer = regexp.MustCompile(`CreateContainer within sandbox "([0-9a-f]+)" for (.*) returns container id "([0-9a-f]+)"`)
	ranSandbox       = regexp.MustCompile(`RunPodSandbox for (.*) returns sandbox id "([0-9a-f]+)"`)
	metadataNameRE   = regexp.MustCompile(`(?:\bName:|\bname:\s*")([^,"\s}]+)`)
	metadataUID      = regexp.MustCompile(`(?:\bUid:|\buid:\s*")([^,"\s}]+)`)
)

// metadataName is the name in a CRI metadata as containerd prints it.
func metadataName(metadata string) string {
	if m := metadataNameRE.FindStringSubmatch(metadata); m != nil {
		return m[1]
	}
	return ""
}

// runningSince says whether a pod's container runs, and since when.
func runningSince(p corev1.Pod, container string) (bool, time.Time) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == container && c.State.Running != nil {
			return true, c.State.Running.StartedAt.Time
		}
	}
	return false, time.Time{}
}

func condition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// eventTime is when an event last happened, whichever of its fields says it.
func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// parseTime reads a time as kubectl prints one.
func parseTime(s string) (time.Time, error) {
	s = normalize(s)
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02 15:04:05.999999999 -0700 MST"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time", s)
}
