package checks

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// The checkers against a fake cluster: what each accepts (every correct form of an answer) and
// what it refuses (a state that doing nothing leaves, a wrong or guessed answer), and that a FAIL
// says where to look.

// root is the repository's root.
var root = repo.Root()

var now = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

// cluster is a fake apiserver holding one node, "minikube", as minikube's, and what a test adds.
type cluster struct {
	t       *testing.T
	client  *fake.Clientset
	answers string
	raw     map[string]string // the node proxy's answers, by path
	// allowed says which nodes/<subresource> the ServiceAccount kubelet-reader may get.
	allowed map[string]bool
	// node is what the node's shell prints, by a piece of the script that prints it (the
	// kubelet's journal: "journalctl --unit kubelet").
	node map[string]string
}

// machineID is the fake node's, in its Node and in its /etc/machine-id.
const machineID = "0123456789abcdef0123456789abcdef"

// shell is the node's shell, as minikube ssh gives it: machine ID first, lines ending in \r\n.
func (c *cluster) shell(_ context.Context, script string) ([]byte, error) {
	_, rest, ok := strings.Cut(script, "echo '"+nodeMark+"'; ")
	require.True(c.t, ok, "the node's script reads the machine ID first: %s", script)
	// The node's bash reads it: it must at least parse.
	out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput()
	require.NoError(c.t, err, "bash -n -c %q: %s", script, out)
	out = []byte(machineID + "\n" + nodeMark + "\n")
	for _, key := range slices.Sorted(maps.Keys(c.node)) {
		if strings.Contains(rest, key) {
			out = append(out, c.node[key]...)
		}
	}
	return bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n")), nil
}

// journalText is a line of a unit's journal as journalctl --output short-unix prints it.
func journalText(unit string, at time.Time, message string) string {
	return fmt.Sprintf("%d.%06d minikube %s[512]: %s\n", at.Unix(), at.Nanosecond()/1000, unit, message)
}

func newCluster(t *testing.T, objects ...runtime.Object) *cluster {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "minikube", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status: corev1.NodeStatus{
			NodeInfo:        corev1.NodeSystemInfo{MachineID: machineID},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.49.2"}, {Type: corev1.NodeHostName, Address: "minikube"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		},
	}
	c := &cluster{t: t, answers: t.TempDir(), raw: map[string]string{}, allowed: map[string]bool{}, node: map[string]string{}}
	c.client = fake.NewClientset(append([]runtime.Object{n}, objects...)...)
	c.client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = sar.Spec.User == readerUser && c.allowed[sar.Spec.ResourceAttributes.Subresource]
		return true, sar, nil
	})
	return c
}

func (c *cluster) env() Env {
	root, err := filepath.Abs(root)
	require.NoError(c.t, err)
	return Env{Client: c.client, Answers: c.answers, Root: root, Now: func() time.Time { return now }, Shell: c.shell,
		Raw: func(_ context.Context, path string) ([]byte, error) {
			if body, ok := c.raw[path]; ok {
				return []byte(body), nil
			}
			return nil, fmt.Errorf("the fake proxy has no %s", path)
		}}
}

func (c *cluster) answer(file, content string) {
	require.NoError(c.t, os.WriteFile(filepath.Join(c.answers, file), []byte(content), 0o644))
}

func (c *cluster) check(f func(context.Context, Env) (Result, error)) Result {
	r, err := f(context.Background(), c.env())
	require.NoError(c.t, err)
	return r
}

// passes and fails say what a result must be; fails also names a piece of what is missing.
func passes(t *testing.T, r Result, msg string) {
	t.Helper()
	assert.True(t, r.Passed(), "%s: still misses %v", msg, r.Missing)
}

func fails(t *testing.T, r Result, want, msg string) {
	t.Helper()
	if assert.False(t, r.Passed(), msg) {
		assert.Contains(t, strings.Join(r.Missing, "\n"), want, msg)
	}
}

// expect says a result passes (want "") or fails naming want.
func expect(t *testing.T, r Result, want, msg string) {
	t.Helper()
	if want == "" {
		passes(t, r, msg)
	} else {
		fails(t, r, want, msg)
	}
}

func mirror(namespace, name, hash string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name),
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: hash, "kubernetes.io/config.hash": hash}},
		Spec: corev1.PodSpec{NodeName: "minikube"}}
}

func TestFindStaticPods(t *testing.T) {
	c := newCluster(t, mirror("kube-system", "etcd-minikube", "h1"), mirror("kube-system", "kube-apiserver-minikube", "h2"),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-1"}, Spec: corev1.PodSpec{NodeName: "minikube"}})
	c.raw["/api/v1/nodes/minikube/proxy/configz"] = `{"kubeletconfig":{"staticPodPath":"/etc/kubernetes/manifests"}}`

	fails(t, c.check(checkFindStaticPods), "your answers in", "no answer file")
	c.answer("01-static-pods.yaml", "staticPodPath: \"\"\nmirrorPods: []\n")
	fails(t, c.check(checkFindStaticPods), "mirrorPods, staticPodPath still empty", "the template, untouched")
	c.answer("01-static-pods.yaml", "staticPodPath: /etc/kubernetes/manifests/\nmirrorPods: [kube-system/etcd-minikube, kube-apiserver-minikube]\n")
	passes(t, c.check(checkFindStaticPods), "a trailing slash, a bare name")
	c.answer("01-static-pods.yaml", "staticPodPath: /etc/kubernetes/manifests\nmirrorPods: [kube-system/etcd-minikube, kube-system/kube-apiserver-minikube, kube-system/coredns-1]\n")
	fails(t, c.check(checkFindStaticPods), "kube-system/coredns-1 out of mirrorPods", "a pod the apiserver made")
	c.answer("01-static-pods.yaml", "staticPodPath: /etc/kubernetes/manifests\nmirrorPods: [kube-system/etcd-minikube]\n")
	fails(t, c.check(checkFindStaticPods), "mirror pod kube-system/kube-apiserver-minikube in mirrorPods", "one missing")
	c.answer("01-static-pods.yaml", "staticPodPath: /etc/kubelet.d\nmirrorPods: [kube-system/etcd-minikube, kube-system/kube-apiserver-minikube]\n")
	fails(t, c.check(checkFindStaticPods), "the kubelet's /configz says otherwise", "another path")
	c.answer("01-static-pods.yaml", "staticPodPat: /etc/kubernetes/manifests\n")
	fails(t, c.check(checkFindStaticPods), "valid YAML with the template's keys", "a typo in a key")
}

func TestAddStaticPod(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, workshopManifest))
	require.NoError(t, err)
	original, err := staticpods.Decode(data, workshopManifestNode, "minikube")
	require.NoError(t, err)
	started := now.Add(-3 * time.Minute) // the edited pod's container
	// mirrorPod is the mirror of the edited pod, made at made.
	mirrorPod := func(uid types.UID, made time.Time, labels map[string]string) *corev1.Pod {
		p := mirror("default", "workshop-pod-minikube", "edited-hash")
		p.Labels, p.UID, p.CreationTimestamp = labels, uid, metav1.NewTime(made)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pause", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
		return p
	}
	v2 := map[string]string{"app": "workshop-pod", "version": "v2"}
	// The kubelet's journal: it deleted the unedited pod's mirror for the edit, and the edited
	// pod's mirror after the attendee deleted it.
	deletedMirror := func(uid string) string {
		return journalText("kubelet", started, `I1130 19:57:00.000000     512 kubelet.go:3562] "Trying to delete pod" pod="default/workshop-pod-minikube" podUID="`+uid+`"`)
	}
	answers := func(before, after string) string {
		return fmt.Sprintf("hashBefore: %s\nhashAfter: edited-hash\nmirrorUIDBefore: %s\nmirrorUIDAfter: %s\n", original.UID, before, after)
	}
	recreated := started.Add(70 * time.Second)
	tests := []struct {
		name    string
		mirror  *corev1.Pod // nil: none
		journal string
		answers string
		want    string // "" passes
	}{
		{"nothing copied (the README's answers on a fresh cluster)", nil, "", answers("mirror-before", "mirror-after"), "the mirror pod default/workshop-pod-minikube"},
		{"done", mirrorPod("mirror-after", recreated, v2), deletedMirror("unedited-mirror") + deletedMirror("mirror-before"), answers("mirror-before", "mirror-after"), ""},
		{"a made-up hash before the edit", mirrorPod("mirror-after", recreated, v2), deletedMirror("mirror-before"),
			strings.Replace(answers("mirror-before", "mirror-after"), string(original.UID), "0123456789abcdef0123456789abcdef", 1), "hashes to " + string(original.UID)},
		{"one UID for both", mirrorPod("mirror-after", recreated, v2), deletedMirror("mirror-before"), answers("mirror-after", "mirror-after"), "mirrorUIDBefore"},
		{"no edit", mirrorPod("mirror-after", recreated, map[string]string{"app": "workshop-pod"}), deletedMirror("mirror-before"), answers("mirror-before", "mirror-after"), "the label version: v2"},
		// The mirror never deleted: the UIDs of the unedited pod's mirror and of the edit's
		// mirror are two different UIDs too, and the kubelet deleted the first.
		{"the mirror never deleted: the edit's two mirrors for before and after", mirrorPod("edit-mirror", started.Add(-time.Second), v2), deletedMirror("unedited-mirror"),
			answers("unedited-mirror", "edit-mirror"), "the mirror pod deleted, and made again: default/workshop-pod-minikube was made with its container"},
		{"a made-up UID before", mirrorPod("mirror-after", recreated, v2), deletedMirror("unedited-mirror"), answers("11111111-2222-3333-4444-555555555555", "mirror-after"),
			`mirrorUIDBefore: the kubelet never deleted a mirror pod default/workshop-pod-minikube with UID "11111111-2222-3333-4444-555555555555"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			if tt.mirror != nil {
				objects = append(objects, tt.mirror)
			}
			c := newCluster(t, objects...)
			c.node["journalctl --unit kubelet"] = tt.journal
			c.answer("02-static-pod.yaml", tt.answers)
			expect(t, c.check(checkAddStaticPod), tt.want, tt.name)
		})
	}
}

func TestBrokenManifest(t *testing.T) {
	refused := journalText("kubelet", now.Add(-time.Minute), `E1130 19:59:00.000000     512 file.go:187] "Could not process manifest file" err="static pods may not reference secrets" path="/etc/kubernetes/manifests/workshop-broken.yaml"`)
	tests := []struct {
		name, journal, answer string
		mirror                bool
		want                  string // "" passes
	}{
		{"the template", refused, "Replace this line with the kubelet's reason\n", false, "the kubelet's own words"},
		{"the reason", refused, "static pods may not reference secrets", false, ""},
		{"the whole journal line", refused, `E1130 kubelet "Could not process manifest file" err=\"static pods may not reference secrets\" path="/etc/kubernetes/manifests/workshop-broken.yaml"`, false, ""},
		{"the README's reason on a fresh cluster", "", "static pods may not reference secrets", false, "the kubelet's refusal of /etc/kubernetes/manifests/workshop-broken.yaml in its journal"},
		{"another file refused", strings.ReplaceAll(refused, "workshop-broken.yaml", "other.yaml"), "static pods may not reference secrets", false, "the kubelet's refusal of"},
		{"a manifest that is not the broken one", refused, "static pods may not reference secrets", true, "it has a mirror pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			if tt.mirror {
				objects = append(objects, mirror("default", "workshop-broken-minikube", "h"))
			}
			c := newCluster(t, objects...)
			c.node["journalctl --unit kubelet"] = tt.journal
			c.answer("03-reason.txt", tt.answer)
			expect(t, c.check(checkBrokenManifest), tt.want, tt.name)
		})
	}
}

func TestKubeletWillNotStart(t *testing.T) {
	frozen := now.Add(-3 * time.Minute)
	node := func(readySince time.Time) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "minikube"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{MachineID: machineID},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}}}
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "minikube"},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: now.Add(-5 * time.Second)}}}
	notReady := func(from string, at time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "minikube." + from}, Reason: "NodeNotReady",
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "minikube"}, Source: corev1.EventSource{Component: from},
			Message: "Node minikube status is now: NodeNotReady", LastTimestamp: metav1.NewTime(at)}
	}
	failed := func(at time.Time, line int) string {
		return journalText("kubelet", at, fmt.Sprintf(`E1130 19:57:04.000000    9001 run.go:72] "command failed" err="failed to load kubelet config file, path: /var/lib/kubelet/config.yaml, error: failed to load Kubelet config file /var/lib/kubelet/config.yaml, error failed to decode: yaml: line %d: could not find expected ':'"`, line))
	}
	broken := failed(frozen.Add(4*time.Second), 19) + failed(frozen.Add(5*time.Second), 19)
	answers := func(line int, renewed time.Time) string {
		return fmt.Sprintf("error: 'failed to load kubelet config file, path: /var/lib/kubelet/config.yaml, error: yaml: line %d: could not find expected '':'''\nleaseRenewTime: %q\n", line, renewed.Format(time.RFC3339Nano))
	}
	noticed := notReady("node-controller", frozen.Add(55*time.Second))
	back := frozen.Add(80 * time.Second)
	tests := []struct {
		name    string
		back    time.Time // the Ready condition's lastTransitionTime
		event   *corev1.Event
		journal string
		answers string
		want    string // "" passes
	}{
		{"down, NotReady, back", back, noticed, broken, answers(19, frozen), ""},
		{"no NotReady seen", back, nil, broken, answers(19, frozen), "the node controller's NodeNotReady event"},
		{"not the kubelet's words", back, noticed, broken, strings.Replace(answers(19, frozen), "could not find expected", "something else", 1), "error: the kubelet's own words"},
		{"Ready since before it went NotReady", frozen.Add(-time.Hour), noticed, broken, answers(19, frozen), "the Node Ready again after it went NotReady"},
		{"not a time", back, noticed, broken, "error: \"yaml: line 19: could not find expected ':'\"\nleaseRenewTime: yesterday\n", "leaseRenewTime: the Lease's spec.renewTime"},
		// Did not do it.
		{"any restart of the kubelet: its own NodeNotReady, the README's error with a line guessed", frozen.Add(20 * time.Second), notReady("kubelet", frozen.Add(3*time.Second)), "",
			answers(19, frozen), `the kubelet's "command failed" line in its journal`},
		{"the kubelet stopped a minute, never broken", back, noticed, "", answers(19, frozen), `the kubelet's "command failed" line in its journal`},
		{"another line of the file guessed", back, noticed, broken, answers(12, frozen), "error: the kubelet's own words"},
		{"a renewTime long before the break", back, noticed, broken, answers(19, frozen.Add(-2*time.Minute)), "leaseRenewTime: the Lease's renewTime while the kubelet was down"},
		{"broken, but only the kubelet's own NodeNotReady", back, notReady("kubelet", frozen.Add(55*time.Second)), broken, answers(19, frozen), "the node controller's NodeNotReady event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := []runtime.Object{lease}
			if tt.event != nil {
				objects = append(objects, tt.event)
			}
			c := newCluster(t, objects...)
			require.NoError(t, c.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), node(tt.back), ""))
			c.node["journalctl --unit kubelet"] = tt.journal
			c.answer("04-kubelet-will-not-start.yaml", tt.answers)
			expect(t, c.check(checkKubeletWillNotStart), tt.want, tt.name)
		})
	}
}

func TestKubeletSetting(t *testing.T) {
	const klogLine = `I1130 20:01:02.123456     512 kubelet.go:2062] "SyncPod enter" pod="kube-system/etcd-minikube" podUID="abc"`
	line := `Nov 30 20:01:02 minikube kubelet[512]: ` + klogLine
	c := newCluster(t)
	c.raw["/api/v1/nodes/minikube/proxy/configz"] = `{"kubeletconfig":{"logging":{"verbosity":0}}}`
	c.node["journalctl --unit kubelet"] = journalText("kubelet", now.Add(-time.Minute), klogLine)
	c.answer("05-kubelet-setting.yaml", fmt.Sprintf("verbosity: 4\nlogLine: '%s'\n", line))
	fails(t, c.check(checkKubeletSetting), "reads its configuration file only when it starts", "the file edited, the kubelet not restarted")
	c.raw["/api/v1/nodes/minikube/proxy/configz"] = `{"kubeletconfig":{"logging":{"verbosity":4}}}`
	passes(t, c.check(checkKubeletSetting), "restarted")
	c.answer("05-kubelet-setting.yaml", fmt.Sprintf("verbosity: 4\nlogLine: '%s'\n", klogLine))
	passes(t, c.check(checkKubeletSetting), "the klog line alone")
	c.answer("05-kubelet-setting.yaml", "verbosity: 4\nlogLine: 'I1130 20:01:02.123456     512 kubelet.go:100] \"Starting kubelet\"'\n")
	fails(t, c.check(checkKubeletSetting), "logLine", "a line verbosity 0 prints too")
	// A line made up as the README's sample shows one: no such line in the journal.
	c.answer("05-kubelet-setting.yaml", "verbosity: 4\nlogLine: 'I1130 20:05:00.000000     512 kubelet.go:2062] \"SyncPod enter\" pod=\"kube-system/etcd-minikube\" podUID=\"abc\"'\n")
	fails(t, c.check(checkKubeletSetting), "logLine: a line of this kubelet's journal, copied whole", "a line made up")
}

func TestCrictlAndAPIServer(t *testing.T) {
	running := func(name, id string, uid types.UID, started time.Time) *corev1.Pod {
		p := mirror("kube-system", name+"-minikube", "h-"+name)
		p.UID = uid
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: name, Ready: true, ContainerID: "containerd://" + id,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
		return p
	}
	// The kubelet's /pods, through the node proxy: its own, fresh statuses.
	kubeletPods := func(pods ...*corev1.Pod) string {
		list := corev1.PodList{}
		for _, p := range pods {
			list.Items = append(list.Items, *p)
		}
		data, err := json.Marshal(list)
		require.NoError(t, err)
		return string(data)
	}
	const (
		exited   = "e702b6b6f99d9a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3"
		current  = "a1b2c3d4e5f6a7b8"
		other    = "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f"
		logsPath = "/api/v1/nodes/minikube/proxy/logs/containers/"
		logFile  = "kube-apiserver-minikube_kube-system_kube-apiserver-" + exited + ".log"
	)
	listing := func(files ...string) string {
		var b strings.Builder
		b.WriteString("<pre>\n")
		for _, f := range files {
			fmt.Fprintf(&b, "<a href=%q>%s</a>\n", f, f)
		}
		return b.String() + "</pre>\n"
	}
	backOff := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver-minikube.1", Namespace: "kube-system"}, Reason: "BackOff",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "kube-system", Name: "kube-apiserver-minikube", UID: "broken-uid"},
		Message:        "Back-off restarting failed container kube-apiserver in pod kube-apiserver-minikube_kube-system(broken-uid)"}
	repairedBackOff := backOff.DeepCopy()
	repairedBackOff.InvolvedObject.UID = "repaired-uid"
	// containerd's journal: the broken pod's sandbox, and the exited container made in it, as
	// containerd 2 prints the CRI's metadata; a kube-apiserver of the repaired pod, as containerd
	// 1 prints it.
	at := now.Add(-10 * time.Minute)
	containerd := journalText("containerd", at, `time="2026-11-30T19:50:00.000000000Z" level=info msg="RunPodSandbox for name:\"kube-apiserver-minikube\" uid:\"broken-uid\" namespace:\"kube-system\" returns sandbox id \"5b5b\""`) +
		journalText("containerd", at, `time="2026-11-30T19:50:01.000000000Z" level=info msg="CreateContainer within sandbox \"5b5b\" for name:\"kube-apiserver\"  attempt:2 returns container id \"`+exited+`\""`) +
		journalText("containerd", at, `time="2026-11-30T19:52:00.000000000Z" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:kube-apiserver-minikube,Uid:repaired-uid,Namespace:kube-system,Attempt:0,} returns sandbox id \"6c6c\""`) +
		journalText("containerd", at, `time="2026-11-30T19:52:01.000000000Z" level=info msg="CreateContainer within sandbox \"6c6c\" for &ContainerMetadata{Name:kube-apiserver,Attempt:0,} returns container id \"`+other+`\""`)
	good := "error: 'Error: unknown flag: --authorisation-mode'\nexitedContainer: e702b6b6f99d9\n"
	exitedLog := map[string]string{logsPath: listing(logFile, "kube-apiserver-minikube_kube-system_kube-apiserver-"+current+".log"),
		logsPath + logFile: "2026-12-01T12:58:01.1Z stderr F Error: unknown flag: --authorisation-mode\n"}
	noLog := map[string]string{logsPath: listing("kube-apiserver-minikube_kube-system_kube-apiserver-" + current + ".log")}
	tests := []struct {
		name       string
		raw        map[string]string // the node proxy's /logs
		event      *corev1.Event
		containerd string
		answers    string
		want       string // "" passes
	}{
		{"the exited container's log says the error", exitedLog, nil, "", good, ""},
		{"a container whose log is another's", map[string]string{logsPath: exitedLog[logsPath], logsPath + logFile: "2026-12-01T12:58:01.1Z stderr F I1201 serving on 8443\n"}, nil, "", good, "does not say"},
		{"its log collected: containerd names its pod, whose BackOff the kubelet recorded", noLog, backOff, containerd, good, ""},
		{"the running container's ID", exitedLog, nil, containerd, "error: 'Error: unknown flag: --authorisation-mode'\nexitedContainer: " + current[:12] + "\n", "the kube-apiserver that runs now"},
		{"the README's fix, not the error", exitedLog, nil, containerd, "error: 'Error: unknown flag: --authorization-mode'\nexitedContainer: e702b6b6f99d9\n", "error: what the exited kube-apiserver container printed"},
		// Did not do it: an event of a broken pod is no evidence for the container answered.
		{"a BackOff of the running pod", noLog, repairedBackOff, containerd, good, "to have been broken and repaired"},
		{"no log, no event", noLog, nil, containerd, good, "to have been broken and repaired"},
		{"a made-up container ID beside a broken pod's BackOff", noLog, backOff, containerd, "error: 'Error: unknown flag: --authorisation-mode'\nexitedContainer: 123456789abcdef\n", "containerd never made a kube-apiserver container 123456789abcdef"},
		{"another kube-apiserver's ID beside a broken pod's BackOff", noLog, backOff, containerd, "error: 'Error: unknown flag: --authorisation-mode'\nexitedContainer: " + other[:13] + "\n", "nor the kubelet's BackOff event for its pod (UID repaired-uid)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			if tt.event != nil {
				objects = append(objects, tt.event)
			}
			c := newCluster(t, objects...)
			c.raw["/api/v1/nodes/minikube/proxy/pods"] = kubeletPods(running("etcd", "e1", "etcd-uid", now.Add(-time.Hour)), running("kube-apiserver", current, "repaired-uid", now.Add(-time.Minute)))
			maps.Copy(c.raw, tt.raw)
			c.node["journalctl --unit containerd"] = tt.containerd
			c.answer("06-crictl-and-apiserver.yaml", tt.answers)
			expect(t, c.check(checkCrictlAndAPIServer), tt.want, tt.name)
		})
	}
}

// selfSigned is the issuer of a kubelet's own certificate: <host>-ca@<unix time>.
func selfSigned(made time.Time) string {
	return fmt.Sprintf("minikube-ca@%d", made.Unix())
}

// selfSignedPEM is a certificate as the kubelet makes its own, issued by issuer, for minikube.
func selfSignedPEM(t *testing.T, issuer string) string {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	cert := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "minikube@1"}, Issuer: pkix.Name{CommonName: issuer},
		DNSNames: []string{"minikube"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	ca := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: issuer}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, cert, ca, &key.PublicKey, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestAddressAndPort(t *testing.T) {
	made := now.Add(-30 * time.Minute)
	c := newCluster(t)
	c.node[kubeletSelfSigned] = selfSignedPEM(t, selfSigned(made))
	for _, tt := range []struct {
		issuer, sans, fix string
	}{
		{"issuer=CN = " + selfSigned(made), "DNS:minikube", "kubelet-ca-file + kubelet-tls-server-name=Hostname"},
		{"CN=" + selfSigned(made), "minikube", "--kubelet-ca-file"},
		{selfSigned(made), "[DNS:minikube]", "rotate-server-certificates"},
		{selfSigned(made), "DNS:minikube", "--via=apiserver"},
		{selfSigned(made), "DNS:minikube", "kubelet.serverTLSBootstrap"},
	} {
		c.answer("07-address-and-port.yaml", fmt.Sprintf("address: 192.168.49.2\nport: 10250\nissuer: %q\nsans: %q\nfix: %q\n", tt.issuer, tt.sans, tt.fix))
		passes(t, c.check(checkAddressAndPort), tt.issuer+" / "+tt.sans+" / "+tt.fix)
	}
	for _, tt := range []struct{ issuer, sans, fix, want string }{
		{selfSigned(now.Add(-48 * time.Hour)), "DNS:minikube", "via-apiserver", "was not made by this node's kubelet"},
		{"CN = kubernetes", "DNS:minikube", "via-apiserver", "the kubelet signed it itself"},
		{selfSigned(made), "DNS:minikube, IP Address:192.168.49.2", "via-apiserver", "the host name only"},
		{selfSigned(made), "DNS:minikube", "turn TLS off", "fix: one way past"},
		// The README's sample, its second made up within the node's life: not the node's certificate.
		{selfSigned(made.Add(time.Minute)), "DNS:minikube", "via-apiserver", "issuer: the issuer of the certificate in the node"},
	} {
		c.answer("07-address-and-port.yaml", fmt.Sprintf("address: 192.168.49.2\nport: 10250\nissuer: %q\nsans: %q\nfix: %q\n", tt.issuer, tt.sans, tt.fix))
		fails(t, c.check(checkAddressAndPort), tt.want, tt.want)
	}
	c.answer("07-address-and-port.yaml", fmt.Sprintf("address: minikube\nport: 10255\nissuer: %q\nsans: DNS:minikube\nfix: via-apiserver\n", selfSigned(made)))
	r := c.check(checkAddressAndPort)
	fails(t, r, "address: the node's InternalIP", "the hostname is not what the client dials first")
	fails(t, r, "port: the one the kubelet reports", "the read-only port")
}

func TestTokenAndRBAC(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubelet-reader", Name: "kubelet-reader"}}
	answers := "beforeRBAC: 403\nafterRBAC: 200\nforbidden: 'Forbidden (user=system:serviceaccount:kubelet-reader:kubelet-reader, verb=get, resource=nodes, subresource(s)=[pods proxy])'\nnarrowest: %s\n"
	// The token in the node: its mode, then the token (the checker's script prints them so).
	onNode := func(mode, token string) string { return mode + "\n" + nodeMark + "\n" + token }
	setup := func(objects ...runtime.Object) *cluster {
		c := newCluster(t, objects...)
		c.client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			review := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
			switch review.Spec.Token {
			case "reader-token":
				review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: readerUser}}
			case "default-token":
				review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "system:serviceaccount:default:default"}}
			default:
				review.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
			}
			return true, review, nil
		})
		c.node[nodeToken] = onNode("600", "reader-token")
		return c
	}

	c := setup()
	c.answer("08-token-and-rbac.yaml", fmt.Sprintf(answers, "nodes/pods"))
	fails(t, c.check(checkTokenAndRBAC), "the ServiceAccount kubelet-reader/kubelet-reader", "the README's answers on a fresh cluster")

	c = setup(sa)
	c.answer("08-token-and-rbac.yaml", fmt.Sprintf(answers, "pods"))
	fails(t, c.check(checkTokenAndRBAC), "get on nodes/pods", "no role bound")
	c.allowed["pods"] = true
	passes(t, c.check(checkTokenAndRBAC), "nodes/pods, named as the subresource alone")
	c.allowed["proxy"] = true
	fails(t, c.check(checkTokenAndRBAC), "no nodes/proxy for kubelet-reader", "more than /pods needs")
	c.allowed["proxy"] = false
	c.answer("08-token-and-rbac.yaml", fmt.Sprintf(answers, "nodes/proxy"))
	fails(t, c.check(checkTokenAndRBAC), "narrowest", "the wide one")
	c.answer("08-token-and-rbac.yaml", "beforeRBAC: 401\nafterRBAC: 200\nforbidden: 'Forbidden'\nnarrowest: nodes/pods\n")
	r := c.check(checkTokenAndRBAC)
	fails(t, r, "401 would mean", "a guessed status")
	fails(t, r, "word for word", "not the kubelet's words")

	// Did not do it: the README's answers and its RBAC applied, but no token given the kubelet.
	for _, tt := range []struct{ name, node, want string }{
		{"no token in the node", onNode("", ""), "the token you gave the kubelet, on the node at /home/docker/token"},
		{"a token readable by all in the node", onNode("644", "reader-token"), "the token on the node readable by root alone"},
		{"another ServiceAccount's token", onNode("600", "default-token"), "to be a valid token of kubelet-reader"},
		{"no token at all", onNode("600", "made-up"), "to be a valid token of kubelet-reader: the apiserver says it is not (invalid bearer token)"},
	} {
		c.answer("08-token-and-rbac.yaml", fmt.Sprintf(answers, "nodes/pods"))
		c.node[nodeToken] = tt.node
		fails(t, c.check(checkTokenAndRBAC), tt.want, tt.name)
	}
	// The copy in the answers, this user's alone.
	c.node[nodeToken] = onNode("600", "reader-token")
	require.NoError(t, os.WriteFile(filepath.Join(c.answers, "token"), []byte("reader-token"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(c.answers, "token"), 0o644))
	fails(t, c.check(checkTokenAndRBAC), "token readable by others (-rw-r--r--): a token is a password", "the token written world-readable")
	require.NoError(t, os.Chmod(filepath.Join(c.answers, "token"), 0o600))
	passes(t, c.check(checkTokenAndRBAC), "the token in the answers, 0600")
}

// servingCSR is a kubelet-serving CSR as the controller manager leaves it once approved and signed.
func servingCSR(t *testing.T, name string, approved bool) *certificatesv1.CertificateSigningRequest {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "system:node:minikube"},
		DNSNames: []string{"minikube"}, IPAddresses: []net.IP{net.ParseIP("192.168.49.2")}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, key)
	require.NoError(t, err)
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName, Username: "system:node:minikube"}}
	if approved {
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlApprove"}}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	return csr
}

func TestServingCertificate(t *testing.T) {
	c := newCluster(t, servingCSR(t, "csr-abcde", true), servingCSR(t, "csr-pending", false))
	for _, tt := range []struct{ csr, issuer, sans string }{
		{"csr-abcde", "issuer=CN = kubernetes", "DNS:minikube, IP Address:192.168.49.2"},
		{"certificatesigningrequest.certificates.k8s.io/csr-abcde", "kubernetes", "IP Address:192.168.49.2, DNS:minikube"},
	} {
		c.answer("09-serving-certificate.yaml", fmt.Sprintf("csr: %s\nissuer: %q\nsans: %q\n", tt.csr, tt.issuer, tt.sans))
		passes(t, c.check(checkServingCertificate), tt.csr)
	}
	c.answer("09-serving-certificate.yaml", "csr: csr-pending\nissuer: kubernetes\nsans: 'DNS:minikube, IP Address:192.168.49.2'\n")
	fails(t, c.check(checkServingCertificate), "nothing in the cluster approves", "not approved")
	c.answer("09-serving-certificate.yaml", "csr: csr-abcde\nissuer: kubernetes\nsans: 'DNS:minikube'\n")
	fails(t, c.check(checkServingCertificate), "an IP address among them", "the old certificate's names")
	c.answer("09-serving-certificate.yaml", "csr: csr-nope\nissuer: kubernetes\nsans: x\n")
	fails(t, c.check(checkServingCertificate), "no CertificateSigningRequest of this cluster", "a made-up name")
}

func TestNodeProxy(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubelet-reader", Name: "kubelet-reader"}}
	reader := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: readerBinding, ResourceVersion: "500"}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: proxyBinding}}
	pods, err := json.Marshal(corev1.PodList{Items: make([]corev1.Pod, 6)})
	require.NoError(t, err)
	// history is what the apiserver remembers of the opt-in binding since the reader's; expired,
	// when not "", is the oldest resourceVersion it still remembers, when that is later.
	var history []watch.EventType
	var expired string
	var watched []string
	setup := func(objects ...runtime.Object) *cluster {
		c := newCluster(t, objects...)
		c.raw["/api/v1/nodes/minikube/proxy/pods"] = string(pods)
		c.client.PrependWatchReactor("clusterrolebindings", func(a k8stesting.Action) (bool, watch.Interface, error) {
			since := a.(k8stesting.WatchAction).GetWatchRestrictions().ResourceVersion
			watched = append(watched, since)
			if expired != "" && since != expired {
				return true, nil, apierrors.NewResourceExpired("too old resource version: " + since + " (" + expired + ")")
			}
			w := watch.NewFakeWithChanSize(len(history), false)
			for _, e := range history {
				w.Action(e, binding)
			}
			w.Stop()
			return true, w, nil
		})
		return c
	}

	history = []watch.EventType{watch.Added}
	c := setup(sa, reader, binding)
	c.allowed["pods"], c.allowed["proxy"] = true, true
	c.answer("10-node-proxy.yaml", "path: /api/v1/nodes/minikube/proxy/pods\npods: 6\nproxyNeeds: nodes/proxy\n")
	r := c.check(checkNodeProxy)
	fails(t, r, "the opt-in role removed again", "the role still bound")
	require.NoError(t, c.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), proxyBinding, metav1.DeleteOptions{}))
	history = []watch.EventType{watch.Added, watch.Deleted}
	fails(t, c.check(checkNodeProxy), "something else still grants it", "nodes/proxy granted some other way")
	c.allowed["proxy"] = false
	watched = nil
	passes(t, c.check(checkNodeProxy), "applied, then removed")
	assert.Equal(t, []string{"500"}, watched, "the history from the reader's binding on")
	for _, path := range []string{"https://127.0.0.1:40211/api/v1/nodes/minikube/proxy/pods", "/api/v1/nodes/minikube/proxy/pods/"} {
		c.answer("10-node-proxy.yaml", fmt.Sprintf("path: %s\npods: 6\nproxyNeeds: proxy\n", path))
		passes(t, c.check(checkNodeProxy), path)
	}
	// The apiserver restarted since the reader's binding was made: its memory starts later.
	expired, watched = "700", nil
	passes(t, c.check(checkNodeProxy), "the history from the oldest the apiserver remembers")
	assert.Equal(t, []string{"500", "700"}, watched)
	expired = ""
	c.answer("10-node-proxy.yaml", "path: /api/v1/nodes/minikube/pods\npods: 7\nproxyNeeds: nodes/pods\n")
	r = c.check(checkNodeProxy)
	fails(t, r, "path: the apiserver path", "not the proxy's path")
	fails(t, r, "(6 now)", "another count")
	fails(t, r, "proxyNeeds", "the wrong permission")

	// Did not do it: the README's answers and the reader's role, the opt-in role never applied
	// (absent, as on a fresh cluster), or applied and never removed.
	c.answer("10-node-proxy.yaml", "path: /api/v1/nodes/minikube/proxy/pods\npods: 6\nproxyNeeds: nodes/proxy\n")
	for name, h := range map[string][]watch.EventType{"never applied": nil, "deleted, never made since": {watch.Deleted}} {
		history = h
		fails(t, c.check(checkNodeProxy), "the opt-in role applied, then removed: the apiserver saw no ClusterRoleBinding kubelet-reader-node-proxy made and deleted", name)
	}
}

func TestDaemonSet(t *testing.T) {
	client := []byte("the client compiled for Linux")
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kubelet-reader", Name: "kubelet-reader"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "kubelet-reader",
			Containers: []corev1.Container{{Name: "client", Image: "kubelet-walkthrough/client:dev",
				Args: []string{"--node=$(NODE_NAME)", "--auth=token", "--via=kubelet", "--interval=30s", "-o", "wide"},
				Env:  []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}}}}}}}
	const id = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubelet-reader", Name: "kubelet-reader-x1", Labels: map[string]string{"app": "kubelet-reader"}},
		Spec:   corev1.PodSpec{NodeName: "minikube"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "client", Ready: true, ContainerID: "containerd://" + id}}}}
	table := "NODE       NAMESPACE     NAME                      READY   STATUS    RESTARTS   SOURCE   IP             VIA       UID   AGE\n" +
		"minikube   kube-system   kube-apiserver-minikube   1/1     Running   0          file     192.168.49.2   kubelet   abc   1h\n"
	tests := []struct {
		name    string
		built   []byte // .bin/kubelet-client; nil: none
		running []byte // the program in the pod's container
		log     string
		want    string // "" passes
	}{
		{"the client, reading its kubelet", client, client, table, ""},
		{"a TLS error in its log", client, client, "error: tls: failed to verify certificate: x509: certificate signed by unknown authority\n", "A certificate error?"},
		// Did not do it: another program prints the client's table.
		{"a busybox DaemonSet echoing the row", client, []byte("busybox"), table, "the DaemonSet's pod to run the client you built"},
		{"no client compiled here", nil, client, table, "the client the image holds, compiled here: .bin/kubelet-client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, ds, pod)
			c.allowed["pods"] = true
			c.client.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "log" {
					return false, nil, nil
				}
				return true, &runtime.Unknown{Raw: []byte(tt.log)}, nil
			})
			c.node["crictl inspect"] = fileSum256(tt.running) + "  /proc/4242/exe\n"
			env := c.env()
			env.Root = t.TempDir()
			if tt.built != nil {
				require.NoError(t, os.MkdirAll(filepath.Join(env.Root, ".bin"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(env.Root, ".bin", "kubelet-client"), tt.built, 0o755))
			}
			r, err := checkDaemonSet(context.Background(), env)
			require.NoError(t, err)
			expect(t, r, tt.want, tt.name)
		})
	}
}

// The node's shell must be the kubeconfig's node's.
func TestNodeShell(t *testing.T) {
	c := newCluster(t)
	c.node["echo hello"] = "hello\n"
	env := c.env()
	n, err := node(context.Background(), env)
	require.NoError(t, err)
	out, err := nodeShell(context.Background(), env, n, "echo hello")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", out, "the script's output, its terminal's \\r\\n read as \\n")
	n.Status.NodeInfo.MachineID = "another-node"
	_, err = nodeShell(context.Background(), env, n, "echo hello")
	assert.ErrorContains(t, err, `minikube ssh reached a node whose machine ID is "`+machineID+`", not the node minikube of your kubeconfig's cluster (another-node)`)
}

func TestNormalizers(t *testing.T) {
	assert.Equal(t, []string{"192.168.49.2", "minikube"}, sanList("DNS:minikube, IP Address:192.168.49.2"))
	assert.Equal(t, []string{"minikube"}, sanList(`["DNS:minikube"]`))
	for in, want := range map[string]string{"--kubelet-ca-file": "ca", "kubelet-ca-file and kubelet-tls-server-name=Hostname": "ca",
		"--via=apiserver": "proxy", "kubelet.rotate-server-certificates": "csr", "serverTLSBootstrap": "csr"} {
		assert.Equal(t, want, fixes[normalizeFix(in)], in)
	}
	for _, s := range []string{"2026-11-30T19:28:46.343893Z", "2026-11-30T19:28:46Z", `"2026-11-30T19:28:46Z"`} {
		_, err := parseTime(s)
		assert.NoError(t, err, s)
	}
	assert.Equal(t, "/etc/kubernetes/manifests", normalize(" '/etc/kubernetes/manifests/' "))
}
