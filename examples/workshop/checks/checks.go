// Package checks holds the workshop's checkers: each inspects the cluster of the current
// kubeconfig context (minikube for attendees, the embedded mini-cluster in CI) and the
// attendee's answers, and says PASS or what is missing.
package checks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
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
	// Offline exercises need no cluster (the coding ones).
	Offline bool
	Check   func(ctx context.Context, env Env) (Result, error)
}

// Exercises lists them in order.
var Exercises = []Exercise{
	{1, "01-find-static-pods", "Find the control plane's static pods", false, checkFindStaticPods},
	{2, "02-add-static-pod", "Add, edit and mirror a static pod", false, checkAddStaticPod},
	{3, "03-broken-manifest", "Break a manifest and find the kubelet's reason", false, checkBrokenManifest},
	{4, "04-token-and-rbac", "A ServiceAccount token against the kubelet: 403, then RBAC", false, checkTokenAndRBAC},
	{5, "05-address-and-port", "Where the kubelet is, and whose certificate it shows", false, checkAddressAndPort},
	{6, "06-node-proxy", "Through the apiserver's node proxy", false, checkNodeProxy},
	{7, "07-daemonset", "The client in the cluster, as an agent", false, checkDaemonSet},
	{8, "08-toy-remove", "Coding: REMOVE in the toy's sync loop", true, checkCoding("08-toy-remove")},
	{9, "09-toy-namespace-filter", "Coding: /pods?namespace= on the toy", true, checkCoding("09-toy-namespace-filter")},
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
// not exist yet.
func answers(env Env, r *Result, file string, v any) bool {
	path := filepath.Join(env.Answers, file)
	data, err := os.ReadFile(path)
	if err != nil {
		r.missing("your answers in %s (copy the exercise's answers template there)", path)
		return false
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		r.missing("%s to be valid: %v", path, err)
		return false
	}
	return true
}

// mirrorPods lists the mirror pods on a node, by name.
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
