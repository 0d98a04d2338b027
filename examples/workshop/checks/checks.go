// Package checks holds the workshop's checkers: each inspects the cluster of the current
// kubeconfig context (minikube for attendees, chapter 12's node in the rehearsal) and the
// attendee's answers, and says PASS or what is missing — and where to look.
//
// A checker passes only on evidence that doing the exercise leaves: objects, events and log lines
// tied to the answers (the mirror pod the kubelet made again after its deletion, and its journal
// line for the one it deleted; the kubelet's refusal of a manifest; containerd's record of an
// exited container; the CSR an attendee approved), creation times after what the exercise
// starts from, the image built from the attendee's own compile, the test run by the checker's own
// harness. Never on answers a README prints, never on a state a fresh cluster already has — but
// for exercise 1, a first look whose README prints what the commands find: its checker is the
// day's test that minikube works, and passes on a new cluster with its answers. Where
// the evidence is only on the node (the kubelet's and containerd's journals, a file the README
// copies there, a process), the checker reads it as the README's own steps do, through minikube
// ssh, after checking that it reached the kubeconfig's node (node.go).
package checks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

// Env is what a check may look at.
type Env struct {
	Client kubernetes.Interface
	Config *rest.Config
	// Answers is the directory of the attendee's answer files (default examples/workshop/answers).
	Answers string
	// Node is the node the exercises use; empty means the cluster's only node.
	Node string
	// Root is the repository root, for the exercises' own files.
	Root string
	// Now is the time the check runs (time.Now when nil).
	Now func() time.Time
	// Raw GETs an apiserver path, as kubectl get --raw (through Client when nil): the kubelet's
	// /configz and /pods through the node proxy.
	Raw func(ctx context.Context, path string) ([]byte, error)
	// Shell runs a script in the node and returns what it printed (through minikube ssh when
	// nil: see nodeShell). Profile is the minikube profile that owns the node ("" for minikube's
	// default).
	Shell   func(ctx context.Context, script string) ([]byte, error)
	Profile string
	// attendeeCode puts files in place of a coding exercise's own (its path → the file to read
	// instead), as an attendee's edit would: the checker's own tests build the reference
	// solutions this way, without touching the repository.
	attendeeCode map[string]string
}

// raw GETs an apiserver path. With Config, through a client that follows no redirect and
// bounds what it reads: the node proxy passes a kubelet's redirect on, and client-go's transport
// would send the kubeconfig's credentials along to wherever it points
// (kubeletclient.NewAPIServerClient).
func (e Env) raw(ctx context.Context, path string) ([]byte, error) {
	if e.Raw != nil {
		return e.Raw(ctx, path)
	}
	client := e.Client
	if e.Config != nil {
		guarded, err := kubeletclient.NewAPIServerClient(e.Config, 0)
		if err != nil {
			return nil, err
		}
		client = guarded
	}
	return client.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
}

func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Result is a check's verdict: passed, or the things still missing.
type Result struct {
	Missing []string
	// Notes are things the check could not look at on this cluster, said rather than hidden.
	Notes []string
}

// Passed says whether nothing is missing.
func (r Result) Passed() bool { return len(r.Missing) == 0 }

func (r *Result) missing(format string, args ...any) {
	r.Missing = append(r.Missing, fmt.Sprintf(format, args...))
}

// Exercise is one workshop exercise.
type Exercise struct {
	Number int
	Name   string // its directory under examples/workshop
	Title  string
	// Answers is the exercise's answer file in examples/workshop/answers ("" when it has none).
	Answers string
	// Offline exercises need no cluster: the coding ones, and exercise 16, whose kubelet runs on
	// the attendee's machine.
	Offline bool
	Check   func(ctx context.Context, env Env) (Result, error)
}

// Coding says whether the exercise is a coding one: code to write, checked by its test, and no
// answer file.
func (e Exercise) Coding() bool { return e.Offline && e.Answers == "" }

// Exercises lists them in order: the node's static pods and the kubelet as a service first,
// then the kubelet's API from outside (address, certificate, token, proxy, an agent in the
// cluster), then two coding exercises on the toy kubelet, then chapter 09 on minikube: a pod
// that runs but is not Ready, and a node whose runtime stops; then chapter 13's Delve on the real
// kubelet, on the attendee's own machine: a static pod's worker; back on the cluster, what
// get nodes/proxy grants: a command run in a pod, both ways; last, chapter 10 on minikube: the
// QoS classes on the node, an eviction in the kubelet's order, and CrashLoopBackOff's waits.
var Exercises = []Exercise{
	{1, "01-find-static-pods", "Find the control plane's static pods", "01-static-pods.yaml", false, checkFindStaticPods},
	{2, "02-add-static-pod", "Add a static pod, edit it, delete its mirror", "02-static-pod.yaml", false, checkAddStaticPod},
	{3, "03-broken-manifest", "Break a manifest and find the kubelet's reason", "03-reason.txt", false, checkBrokenManifest},
	{4, "04-kubelet-will-not-start", "The kubelet that will not start", "04-kubelet-will-not-start.yaml", false, checkKubeletWillNotStart},
	{5, "05-kubelet-setting", "Change a kubelet setting and restart it", "05-kubelet-setting.yaml", false, checkKubeletSetting},
	{6, "06-crictl-and-apiserver", "crictl, and an apiserver that will not start", "06-crictl-and-apiserver.yaml", false, checkCrictlAndAPIServer},
	{7, "07-address-and-port", "Where the kubelet is, and whose certificate it shows", "07-address-and-port.yaml", false, checkAddressAndPort},
	{8, "08-token-and-rbac", "A ServiceAccount token against the kubelet: 403, then RBAC", "08-token-and-rbac.yaml", false, checkTokenAndRBAC},
	{9, "09-serving-certificate", "A serving certificate the cluster CA signs", "09-serving-certificate.yaml", false, checkServingCertificate},
	{10, "10-node-proxy", "Through the apiserver's node proxy, and back out of it", "10-node-proxy.yaml", false, checkNodeProxy},
	{11, "11-daemonset", "The client in the cluster, as an agent", "", false, checkDaemonSet},
	{12, "12-toy-remove", "Coding: REMOVE in the toy's sync loop", "", true, checkCoding("12-toy-remove", "remove_test.go", "TestRemove", testFileSums["12-toy-remove/remove_test.go"])},
	{13, "13-toy-namespace-filter", "Coding: /pods?namespace= on the toy", "", true, checkCoding("13-toy-namespace-filter", "filter_test.go", "TestNamespaceFilter", testFileSums["13-toy-namespace-filter/filter_test.go"])},
	{14, "14-readiness-probe", "A pod that runs but is not Ready", "14-readiness-probe.yaml", false, checkReadinessProbe},
	{15, "15-node-not-ready", "The runtime stops, and the Node goes NotReady", "15-node-not-ready.yaml", false, checkNodeNotReady},
	{16, "16-worker-in-delve", "A static pod's worker, found in Delve", "16-worker-in-delve.yaml", true, checkWorkerInDelve},
	{17, "17-nodes-proxy-exec", "What get nodes/proxy really grants", "17-nodes-proxy-exec.yaml", false, checkNodesProxyExec},
	{18, "18-qos-on-the-node", "QoS classes, where the node keeps them", "18-qos-on-the-node.yaml", false, checkQoSOnTheNode},
	{19, "19-eviction", "A threshold, and the kubelet's order of eviction", "19-eviction.yaml", false, checkEviction},
	{20, "20-crashloop", "CrashLoopBackOff, in the kubelet's own numbers", "20-crashloop.yaml", false, checkCrashLoop},
}

// Find returns exercise n.
func Find(n int) (Exercise, error) {
	for _, e := range Exercises {
		if e.Number == n {
			return e, nil
		}
	}
	return Exercise{}, fmt.Errorf("no exercise %d: they are 1 to %d", n, len(Exercises))
}

// node returns the exercises' node: env.Node, or the cluster's only node.
func node(ctx context.Context, env Env) (*corev1.Node, error) {
	if env.Node != "" {
		return env.Client.CoreV1().Nodes().Get(ctx, env.Node, metav1.GetOptions{})
	}
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	if len(nodes.Items) != 1 {
		return nil, fmt.Errorf("the cluster has %d nodes: say which one with --node", len(nodes.Items))
	}
	return &nodes.Items[0], nil
}

// answers reads an answer file into v; ok is false (and a missing item recorded) when it does
// not exist yet or is still the template's. Keys the template does not have are an error:
// a typo in a key would otherwise read as an empty answer.
func answers(env Env, r *Result, file string, v any) bool {
	path := filepath.Join(env.Answers, file)
	data, err := os.ReadFile(path)
	if err != nil {
		r.missing("your answers in %s (cp -r examples/workshop/answers-template examples/workshop/answers, then fill it in)", path)
		return false
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		r.missing("%s to be valid YAML with the template's keys: %v", path, err)
		return false
	}
	return true
}

// unfilled records the answers still empty; it returns true when there are some.
func unfilled(r *Result, env Env, file string, fields map[string]bool) bool {
	var empty []string
	for name, filled := range fields {
		if !filled {
			empty = append(empty, name)
		}
	}
	if len(empty) == 0 {
		return false
	}
	sort.Strings(empty)
	r.missing("your answers in %s: %s still empty", filepath.Join(env.Answers, file), strings.Join(empty, ", "))
	return true
}

// mirrorPods lists the mirror pods on a node, by namespace/name.
func mirrorPods(ctx context.Context, env Env, nodeName string) (map[string]corev1.Pod, error) {
	pods, err := env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
			out[p.Namespace+"/"+p.Name] = p
		}
	}
	return out, nil
}

// normalize makes an answer comparable: surrounding space, quotes and a trailing slash off.
func normalize(s string) string {
	s = strings.TrimSpace(s)
	s = strings.Trim(s, `"'`)
	if len(s) > 1 {
		s = strings.TrimSuffix(s, "/")
	}
	return s
}

// SolutionFiles maps each file of a coding exercise's reference solution
// (examples/workshop/solutions/NAME/) to the exercise's file it takes the place of: what an
// attendee who solved the exercise has written.
func SolutionFiles(root string, e Exercise) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "examples", "workshop", "solutions", e.Name, "*.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no reference solution for %s in examples/workshop/solutions/%s", e.Name, e.Name)
	}
	solution := map[string]string{}
	for _, f := range files {
		solution[filepath.Join(root, "examples", "workshop", e.Name, filepath.Base(f))] = f
	}
	return solution, nil
}
