package pressure

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
	kubelettypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-minicluster/minicluster"
)

// EvictionOptions say how to run the eviction story.
type EvictionOptions struct {
	// Config is the reading notes' configuration as the kubelet loads it (chapter 02's
	// configload): its address, port, evictionHard, serializeImagePulls and staticPodPath are the
	// kubelet's.
	Config *kubeletconfig.KubeletConfiguration
	// ConfigFile is the file it came from, to name it.
	ConfigFile string
	// Scenario is the node's memory and the pods' use; Static the static pods of staticPodPath.
	Scenario *Scenario
	Static   []*corev1.Pod
	// ScenarioFile is the file the scenario came from, to name it.
	ScenarioFile string
	// TransitionPeriod is the kubelet's evictionPressureTransitionPeriod.
	TransitionPeriod time.Duration
	// StepTimeout bounds the wait for each step's outcome.
	StepTimeout time.Duration
	// Out receives the story.
	Out io.Writer
}

// The kubelet's log lines the story reads: the ranking of each round
// (pkg/kubelet/eviction/eviction_manager.go#L418 (logger.Info("Eviction manager: pods ranked for eviction", "pods", klog.KObjSlice(activePods)))),
// and what evictPod says of each pod it is given
// (pkg/kubelet/eviction/eviction_manager.go#L633-L661 (func (m *managerImpl) evictPod)).
const (
	logRanked   = "Eviction manager: pods ranked for eviction"
	logCritical = "Eviction manager: cannot evict a critical pod"
	logEvicted  = "Eviction manager: pod is evicted successfully"
)

// evictionStory is one run: the cluster, the node's statistics and the kubelet's log.
type evictionStory struct {
	EvictionOptions
	cluster   *minicluster.Cluster
	node      types.NodeName
	stats     *nodeStats
	tap       *logTap
	threshold resource.Quantity
	pods      []*corev1.Pod // every pod of the node, as the kubelet knows it
}

// RunEviction starts a mini-cluster of one node with the reading notes' configuration, creates
// the scenario's pods, and walks the story: every pod running, the node's processes taking
// memory until memory.available is below evictionHard, and giving it back.
func RunEviction(ctx context.Context, opts EvictionOptions) error {
	s, err := startEviction(ctx, opts)
	if err != nil {
		return err
	}
	defer s.cluster.Stop()
	s.intro()
	for i, step := range []func(context.Context) error{s.allRunning, s.spike, s.recover} {
		fmt.Fprintln(s.Out)
		if err := step(ctx); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return nil
}

// startEviction starts the mini-cluster whose kubelet reads the scenario's statistics.
func startEviction(ctx context.Context, opts EvictionOptions) (*evictionStory, error) {
	threshold, err := memoryThreshold(opts.Config)
	if err != nil {
		return nil, err
	}
	s := &evictionStory{EvictionOptions: opts, node: realkubelet.DefaultNodeName, threshold: threshold,
		tap: newLogTap(logRanked, logCritical, logEvicted)}
	runtime := &statsRuntime{usage: func(ns, name string) resource.Quantity { return opts.Scenario.usageNamed(ns, name, s.node) }}
	s.stats = newNodeStats(runtime, opts.Scenario)
	s.cluster, err = minicluster.Start(s.tap.context(ctx), minicluster.Options{
		NodeIP:        opts.Config.Address,
		KubeletPort:   int(opts.Config.Port),
		StaticPodPath: opts.Config.StaticPodPath,
		Configure: func(_ string, _ *options.KubeletFlags, config *kubeletconfig.KubeletConfiguration) {
			config.EvictionHard = opts.Config.EvictionHard
			config.EvictionPressureTransitionPeriod.Duration = opts.TransitionPeriod
			config.SerializeImagePulls = opts.Config.SerializeImagePulls
			config.NodeStatusUpdateFrequency = opts.Config.NodeStatusUpdateFrequency
		},
		Dependencies: func(_ string, deps *kubelet.Dependencies) {
			runtime.RuntimeService = deps.RemoteRuntimeService
			deps.RemoteRuntimeService = runtime
			deps.CAdvisorInterface = s.stats
			deps.RemoteImageService = imageDisk{deps.RemoteImageService}
			// the hollow node's recorder drops every event; without one, RunKubelet makes the kubelet's
			// own, which sends them to the apiserver through EventClient.
			deps.Recorder = nil
			deps.EventClient = deps.KubeClient.CoreV1()
		},
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// memoryThreshold is evictionHard's memory.available, which the story is about.
func memoryThreshold(config *kubeletconfig.KubeletConfiguration) (resource.Quantity, error) {
	value, ok := config.EvictionHard[string(evictionapi.SignalMemoryAvailable)]
	if !ok {
		return resource.Quantity{}, fmt.Errorf("evictionHard has no %s threshold: this story is about that one", evictionapi.SignalMemoryAvailable)
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("evictionHard %s %q: a quantity such as 200Mi (a percentage of the node's memory is the kubelet's too, but not this story's): %w",
			evictionapi.SignalMemoryAvailable, value, err)
	}
	return q, nil
}

func (s *evictionStory) intro() {
	c := s.Config
	fmt.Fprintf(s.Out, "The real kubelet (k8s.io/kubernetes %s) runs as node %q of a mini-cluster (etcd and\n", realkubelet.Version(), s.node)
	fmt.Fprintf(s.Out, "kube-apiserver in this process, as in chapter 08), in a private network namespace, with the\n")
	fmt.Fprintf(s.Out, "reading notes' configuration, %s, as the kubelet loads it:\n", s.ConfigFile)
	fmt.Fprintf(s.Out, "  address: %s, port: %d   its HTTPS server, on the namespace's own lo\n", c.Address, c.Port)
	fmt.Fprintf(s.Out, "  evictionHard: memory.available<%s\n", s.threshold.String())
	fmt.Fprintf(s.Out, "  serializeImagePulls: %t          (see `pulls`)\n", c.SerializeImagePulls)
	fmt.Fprintf(s.Out, "  staticPodPath: %s  %d static pods\n", Relative(c.StaticPodPath), len(s.Static))
	fmt.Fprintf(s.Out, "and evictionPressureTransitionPeriod %s instead of its default 5m0s, so that step 3 waits %s,\n", s.TransitionPeriod, s.TransitionPeriod)
	fmt.Fprintf(s.Out, "not five minutes. The eviction manager reads the node's statistics every 10 s; this chapter's\n")
	fmt.Fprintf(s.Out, "runtime gives them from %s (%s of memory, %s for the node's own\n", s.ScenarioFile, s.Scenario.Memory.String(), s.Scenario.System.String())
	fmt.Fprintf(s.Out, "processes, each pod's working set as the file says), not from cgroups: the pods run in\n")
	fmt.Fprintf(s.Out, "the hollow node's fake runtime.\n")
}

// allRunning creates the scenario's pods and waits until every pod of the node runs.
func (s *evictionStory) allRunning(ctx context.Context) error {
	if err := s.cluster.WaitForNodesReady(ctx); err != nil {
		return fmt.Errorf("node not Ready: %w", err)
	}
	client := s.cluster.Client
	for i := range s.Scenario.PriorityClasses {
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, &s.Scenario.PriorityClasses[i], metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("priority class %s: %w", s.Scenario.PriorityClasses[i].Name, err)
		}
	}
	s.pods = nil
	for _, p := range s.Static {
		s.pods = append(s.pods, p)
	}
	for i := range s.Scenario.Pods {
		p := s.Scenario.Pods[i].DeepCopy()
		p.Spec.NodeName = string(s.node)
		created, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		// As the apiserver returns it: its priority resolved from its class, as the kubelet gets it.
		s.pods = append(s.pods, created)
	}
	sort.Slice(s.pods, func(i, j int) bool { return key(s.pods[i]) < key(s.pods[j]) })
	err := s.poll(ctx, "every pod Running", func() (bool, string, error) {
		list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", string(s.node)).String()})
		if err != nil {
			return false, "", err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == len(s.pods), fmt.Sprintf("%d of %d pods Running", running, len(s.pods)), nil
	})
	if err != nil {
		return err
	}
	available, err := s.nextObservation(ctx, s.stats.setSystem(uint64(s.Scenario.System.Value())))
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, " 1. every pod runs: memory.available %s\n", quantity(available))
	if err := s.printCondition(ctx, corev1.ConditionFalse); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "    the order in which the kubelet would evict them (rankMemoryPressure):\n")
	return s.printRanking()
}

// usage is the scenario's working set of a pod the kubelet runs.
func (s *evictionStory) usage(p *corev1.Pod) (resource.Quantity, bool) {
	return s.Scenario.UsageOf(p, s.node), true
}

// printRanking prints Rank's table: the three keys, and the class that is not one.
func (s *evictionStory) printRanking() error {
	tw := tabwriter.NewWriter(s.Out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "     #\tPOD\tQOS CLASS\tREQUEST\tUSAGE\tOVER REQUEST\tPRIORITY\tUSAGE-REQUEST")
	for i, r := range Rank(s.pods, s.usage) {
		over := "no"
		if r.Exceeds {
			over = "yes"
		}
		name := key(r.Pod)
		switch {
		case kubelettypes.IsStaticPod(r.Pod):
			name += " (static)"
		case r.Critical:
			name += " (critical)"
		}
		fmt.Fprintf(tw, "    %2d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", i+1, name, r.QoS, r.Request.String(), r.Usage.String(), over, r.Priority, r.Above.String())
	}
	return tw.Flush()
}

// spike has the node's processes take the scenario's spike, and tells the rounds of evictions
// that follow from the kubelet's own log, statuses and events.
func (s *evictionStory) spike(ctx context.Context) error {
	marks, _ := s.tap.since(0)
	available, err := s.nextObservation(ctx, s.stats.setSystem(uint64(s.Scenario.System.Value()+s.Scenario.Spike.Value())))
	if err != nil {
		return err
	}
	expected := s.expectEvictions(available)
	fmt.Fprintf(s.Out, " 2. the node's own processes take %s more: memory.available %s, below %s\n", s.Scenario.Spike.String(), quantity(available), s.threshold.String())
	// Wait for the evictions the ranking says, then for a round of the eviction manager that
	// found memory.available above the threshold again: then no more will come.
	var lines []logLine
	err = s.poll(ctx, "the evictions", func() (bool, string, error) {
		lines, _ = s.tap.since(len(marks))
		evicted := evictedIn(lines)
		if len(evicted) < len(expected) {
			return false, fmt.Sprintf("evicted %v, expected %v", evicted, expected), nil
		}
		obs, _ := s.stats.observations()
		return len(obs) > 0 && int64(obs[len(obs)-1]) >= s.threshold.Value(), fmt.Sprintf("memory.available %v", obs), nil
	})
	if err != nil {
		return err
	}
	if err := s.printCondition(ctx, corev1.ConditionTrue); err != nil {
		return err
	}
	if err := s.printNodeEvent(ctx); err != nil {
		return err
	}
	return s.printRounds(ctx, lines, available)
}

// printRounds tells each round of the eviction manager from its log: the ranking, the critical
// pods it could not evict, the pod it evicted with that pod's status and the kubelet's event.
func (s *evictionStory) printRounds(ctx context.Context, lines []logLine, available int64) error {
	round := 0
	var table []string
	for _, r := range Rank(s.pods, s.usage) {
		table = append(table, key(r.Pod))
	}
	usages := map[string]int64{}
	for _, p := range s.pods {
		q, _ := s.usage(p)
		usages[key(p)] = q.Value()
	}
	for _, l := range lines {
		switch l.msg {
		case logRanked:
			round++
			ranked := objectRefs(l.values["pods"])
			fmt.Fprintf(s.Out, "    round %d, memory.available %s: the kubelet's log says %q:\n", round, quantity(available), l.msg)
			switch {
			case round == 1 && slices.Equal(ranked, table):
				fmt.Fprintf(s.Out, "      the order of the table above\n")
			case slices.Equal(ranked, table):
				fmt.Fprintf(s.Out, "      the table's order, less the pods evicted\n")
			default:
				fmt.Fprintf(s.Out, "      NOT the table's order: %s\n", strings.Join(ranked, " "))
			}
		case logCritical:
			fmt.Fprintf(s.Out, "      %s: not evicted, the kubelet's log says %q\n", l.values["pod"], l.msg)
		case logEvicted:
			name := l.values["pod"]
			if err := s.printEvicted(ctx, name); err != nil {
				return err
			}
			available += usages[name]
			table = slices.DeleteFunc(table, func(n string) bool { return n == name })
			fmt.Fprintf(s.Out, "      its %s come back: memory.available %s\n", quantity(usages[name]), quantity(available))
		}
	}
	fmt.Fprintf(s.Out, "    the next round finds memory.available above %s: no more evictions\n", s.threshold.String())
	return nil
}

// printEvicted prints the evicted pod's status and the kubelet's event about it.
func (s *evictionStory) printEvicted(ctx context.Context, name string) error {
	namespace, podName, _ := strings.Cut(name, "/")
	var pod *corev1.Pod
	var event *corev1.Event
	err := s.poll(ctx, name+"'s status and event", func() (bool, string, error) {
		var err error
		pod, err = s.cluster.Client.CoreV1().Pods(namespace).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		events, err := s.cluster.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.name", podName), fields.OneTermEqualSelector("reason", "Evicted")).String()})
		if err != nil {
			return false, "", err
		}
		if len(events.Items) > 0 {
			event = &events.Items[0]
		}
		return pod.Status.Reason == "Evicted" && event != nil, fmt.Sprintf("phase %s reason %q, %d events", pod.Status.Phase, pod.Status.Reason, len(events.Items)), nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "      %s: evicted. Its status: %s, reason %s, %q\n", name, pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			fmt.Fprintf(s.Out, "        condition %s=%s, reason %s\n", c.Type, c.Status, c.Reason)
		}
	}
	fmt.Fprintf(s.Out, "        event %s %s from %s\n", event.Type, event.Reason, event.Source.Component)
	return nil
}

// printNodeEvent prints the kubelet's event on the Node when it meets a threshold.
func (s *evictionStory) printNodeEvent(ctx context.Context) error {
	var event *corev1.Event
	err := s.poll(ctx, "the Node's EvictionThresholdMet event", func() (bool, string, error) {
		events, err := s.cluster.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "Node"), fields.OneTermEqualSelector("reason", "EvictionThresholdMet")).String()})
		if err != nil {
			return false, "", err
		}
		if len(events.Items) > 0 {
			event = &events.Items[0]
		}
		return event != nil, "no event yet", nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "    event on the Node: %s %s %q\n", event.Type, event.Reason, event.Message)
	return nil
}

// recover has the node's processes give the spike back, and waits for MemoryPressure to clear.
func (s *evictionStory) recover(ctx context.Context) error {
	available, err := s.nextObservation(ctx, s.stats.setSystem(uint64(s.Scenario.System.Value())))
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, " 3. the node's processes give the %s back: memory.available %s\n", s.Scenario.Spike.String(), quantity(available))
	if err := s.printCondition(ctx, corev1.ConditionFalse); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "    False again once no round has found the threshold met for evictionPressureTransitionPeriod\n")
	fmt.Fprintf(s.Out, "    (%s here); the evicted pods stay Failed: nothing restarts them (a controller would make new ones)\n", s.TransitionPeriod)
	return nil
}

// printCondition waits until the Node's MemoryPressure condition has status want, and prints it.
func (s *evictionStory) printCondition(ctx context.Context, want corev1.ConditionStatus) error {
	var cond corev1.NodeCondition
	err := s.poll(ctx, "MemoryPressure="+string(want), func() (bool, string, error) {
		node, err := s.cluster.Client.CoreV1().Nodes().Get(ctx, string(s.node), metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeMemoryPressure {
				cond = c
			}
		}
		return cond.Status == want, fmt.Sprintf("MemoryPressure=%s", cond.Status), nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "    Node %s: MemoryPressure=%s  %s  %q\n", s.node, cond.Status, cond.Reason, cond.Message)
	return nil
}

// nextObservation waits for a round of the eviction manager after the first seen ones, and
// returns what it was told memory.available was.
func (s *evictionStory) nextObservation(ctx context.Context, seen int) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.StepTimeout)
	defer cancel()
	for {
		obs, changed := s.stats.observations()
		if len(obs) > seen {
			return int64(obs[len(obs)-1]), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no round of the eviction manager within %s", s.StepTimeout)
		case <-changed:
		}
	}
}

// expectEvictions is what Rank says the rounds will evict: in each round the first pod that is
// not critical, until its memory brings memory.available back to the threshold.
func (s *evictionStory) expectEvictions(available int64) []string {
	var evicted []string
	for _, r := range Rank(s.pods, s.usage) {
		if available >= s.threshold.Value() {
			break
		}
		if !r.Critical {
			evicted = append(evicted, key(r.Pod))
			available += r.Usage.Value()
		}
	}
	return evicted
}

// poll asks check every 200 ms until it says done, and says what it last saw when it does not
// in time.
func (s *evictionStory) poll(ctx context.Context, what string, check func() (bool, string, error)) error {
	return poll(ctx, s.StepTimeout, what, check)
}

func poll(ctx context.Context, timeout time.Duration, what string, check func() (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	var lastErr error
	for {
		done, seen, err := check()
		if err == nil && done {
			return nil
		}
		if err != nil {
			lastErr = err
		} else {
			last = seen
		}
		select {
		case <-ctx.Done():
			if lastErr != nil && last == "" {
				return fmt.Errorf("%s: not seen within %s: %w", what, timeout, lastErr)
			}
			return fmt.Errorf("%s: not seen within %s; last seen: %s", what, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// evictedIn lists the pods the log lines say were evicted.
func evictedIn(lines []logLine) []string {
	var out []string
	for _, l := range lines {
		if l.msg == logEvicted {
			out = append(out, l.values["pod"])
		}
	}
	return out
}

// objectRefs splits klog's printing of a KObjSlice, "[ns/a ns/b]".
func objectRefs(s string) []string {
	return strings.Fields(strings.Trim(s, "[]"))
}

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// quantity prints a number of bytes as a quantity: 20Mi.
func quantity(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

// Relative is path as the reader would type it from the working directory, when it is below it.
func Relative(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
