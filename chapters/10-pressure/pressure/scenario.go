// Package pressure puts the real kubelet (chapter 04's realkubelet, on chapter 08's mini-cluster
// where the story needs an apiserver) in the situations a node in trouble meets, and shows what
// the kubelet does about each, from the kubelet's own outputs: the Node's conditions, the pods'
// statuses, its events and its log.
//
//   - Eviction (RunEviction): the real eviction manager reads node statistics that this package
//     reports — a cAdvisor of its own for the node, the CRI's container statistics for the pods,
//     numbers from a scenario file — sees memory.available fall below evictionHard, sets the
//     Node's MemoryPressure condition and evicts pods in its own order (Rank says why).
//   - QoS on the node (QoS): each pod's QoS class, its cgroup under either cgroup driver and its
//     containers' oom_score_adj, from the kubelet's own functions.
//   - CrashLoopBackOff (RunBackOff): a container that exits a second after each start, and the
//     waits the kubelet puts between the restarts.
//   - "PLEG is not healthy" (RunPLEG): a runtime that stops answering the PLEG's relist, and the
//     Node's Ready condition after the kubelet's three minutes.
//   - Image pulls (RunPulls): three pods' images pulled one at a time and all at once.
//
// What is not real is said where it is: the runtime is the hollow node's fake one (a container "uses"
// what the scenario says; a pull takes the delay the chapter sets), and the statistics come from
// the scenario, not from cgroups. The eviction manager, the status manager, the pod workers, the
// PLEG and the image manager that act on them are the kubelet's.
package pressure

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
)

// Scenario is the node's memory and what each pod uses: what this chapter's runtime reports to
// the kubelet as the node's statistics. node.yaml, beside the chapter, is the default one.
type Scenario struct {
	// Memory is the node's capacity (cAdvisor's MachineInfo.MemoryCapacity).
	Memory resource.Quantity `json:"memory"`
	// System is what the node's own processes use, outside any pod.
	System resource.Quantity `json:"system"`
	// Spike is what the node's own processes take on top, in the story's second step.
	Spike resource.Quantity `json:"spike"`
	// Usage is each pod's working set, by NAMESPACE/NAME: the pods below, and the static pods of
	// the kubelet's staticPodPath (by their manifests' names). A pod not named uses nothing.
	Usage map[string]resource.Quantity `json:"usage"`
	// PriorityClasses are created before the pods, which may name them.
	PriorityClasses []schedulingv1.PriorityClass `json:"priorityClasses"`
	// Pods are created through the apiserver, bound to the node (there is no scheduler).
	Pods []corev1.Pod `json:"pods"`
}

// LoadScenario reads a scenario file, strictly (a misspelt field is an error, not ignored),
// and checks it against the static pods of staticPodPath, which node names as the kubelet
// does.
func LoadScenario(file, staticPodPath string, node types.NodeName) (*Scenario, []*corev1.Pod, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var s Scenario
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	var static []*corev1.Pod
	if staticPodPath != "" {
		listing, err := staticpods.List(staticPodPath, node)
		if err != nil {
			return nil, nil, fmt.Errorf("staticPodPath: %w", err)
		}
		static = listing.Pods
		// The kubelet's pod config records each pod's source as it merges the sources' updates
		// (pkg/kubelet/config/config.go, func (s *podStorage) merge): what makes a pod static.
		for _, p := range static {
			p.Annotations[kubetypes.ConfigSourceAnnotationKey] = kubetypes.FileSource
		}
	}
	if err := s.check(static, node); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return &s, static, nil
}

// check refuses what the story could not run: a pod the apiserver would refuse for its name, a
// usage for a pod that is nowhere, and more use than the node has memory.
func (s *Scenario) check(static []*corev1.Pod, node types.NodeName) error {
	if s.Memory.Sign() <= 0 {
		return errors.New("memory: the node's capacity must be more than 0")
	}
	for name, q := range map[string]resource.Quantity{"system": s.System, "spike": s.Spike} {
		if q.Sign() < 0 {
			return fmt.Errorf("%s %s: must not be negative", name, q.String())
		}
	}
	names := map[string]bool{}
	for _, p := range static {
		names[manifestKey(p, node)] = true
	}
	classes := map[string]bool{}
	for _, pc := range s.PriorityClasses {
		if errs := validation.IsDNS1123Subdomain(pc.Name); len(errs) > 0 {
			return fmt.Errorf("priority class %q: %s", pc.Name, strings.Join(errs, "; "))
		}
		classes[pc.Name] = true
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		if p.Namespace == "" {
			p.Namespace = corev1.NamespaceDefault
		}
		if errs := validation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
			return fmt.Errorf("pod %q: %s", p.Name, strings.Join(errs, "; "))
		}
		if len(p.Spec.Containers) == 0 {
			return fmt.Errorf("pod %s/%s: no containers", p.Namespace, p.Name)
		}
		if c := p.Spec.PriorityClassName; c != "" && !classes[c] && !strings.HasPrefix(c, "system-") {
			return fmt.Errorf("pod %s/%s: priority class %q is not among priorityClasses", p.Namespace, p.Name, c)
		}
		key := p.Namespace + "/" + p.Name
		if names[key] {
			return fmt.Errorf("pod %s: twice (or also a static pod)", key)
		}
		names[key] = true
	}
	// A static pod's name in the kubelet ends in "-NODE"; an API pod of such a name would be
	// taken for the pod of the name without it.
	for i := range s.Pods {
		p := &s.Pods[i]
		if trimmed := p.Namespace + "/" + strings.TrimSuffix(p.Name, "-"+string(node)); trimmed != p.Namespace+"/"+p.Name && names[trimmed] {
			return fmt.Errorf("pod %s/%s: the name the kubelet gives %s's pod on node %s", p.Namespace, p.Name, trimmed, node)
		}
	}
	var used resource.Quantity
	for key, q := range s.Usage {
		if !names[key] {
			return fmt.Errorf("usage of %s: no such pod (have %s)", key, strings.Join(sortedKeys(names), ", "))
		}
		if q.Sign() < 0 {
			return fmt.Errorf("usage of %s: %s must not be negative", key, q.String())
		}
		used.Add(q)
	}
	used.Add(s.System)
	used.Add(s.Spike)
	if used.Cmp(s.Memory) > 0 {
		return fmt.Errorf("the pods, the node's processes and the spike use %s, more than the node's %s", used.String(), s.Memory.String())
	}
	return nil
}

// UsageOf is the working set the scenario gives pod, as the kubelet names it.
func (s *Scenario) UsageOf(pod *corev1.Pod, node types.NodeName) resource.Quantity {
	return s.usageNamed(pod.Namespace, pod.Name, node)
}

// usageNamed is the working set of the pod the kubelet names namespace/name: a static pod's
// name carries the node's ("web-walkthrough"), the scenario uses the manifest's ("web"). A pod
// the scenario does not name uses nothing.
func (s *Scenario) usageNamed(namespace, name string, node types.NodeName) resource.Quantity {
	if q, ok := s.Usage[namespace+"/"+name]; ok {
		return q
	}
	if q, ok := s.Usage[namespace+"/"+strings.TrimSuffix(name, "-"+string(node))]; ok {
		return q
	}
	return resource.Quantity{Format: resource.BinarySI}
}

// manifestKey is NAMESPACE/NAME with a static pod's node suffix taken off.
func manifestKey(pod *corev1.Pod, node types.NodeName) string {
	name := pod.Name
	if pod.Annotations[kubetypes.ConfigSourceAnnotationKey] == kubetypes.FileSource {
		name = strings.TrimSuffix(name, "-"+string(node))
	}
	return pod.Namespace + "/" + name
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SortedPods orders pods by namespace and name, as a table shows them.
func SortedPods(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}
