// Package podtable prints pods the way `kubectl get pods` lays them out: upper-case headers,
// columns padded by cli-runtime's tab writer, ages as kubectl's human durations.
//
// Its READY, STATUS and RESTARTS are a copy of the apiserver's own pod printer (printPod in
// k8s.io/kubernetes/pkg/printers/internalversion), not a call to it, because of who prints with
// it: chapter 11 and the production client (examples/kubelet-pods) import no kubelet code, and
// printPod would bring k8s.io/kubernetes's internal API groups into the client's build (434
// packages outside the standard library today, 551 with the printer; go list -deps). Chapters
// 04, 05 and 08 link the kubelet anyway and could call printPod, on the internal types after a
// conversion, for 73 packages more; they use this table so that every chapter prints pods alike,
// with one piece of code. TestSummarizeMatchesKubectl holds the copy to printPod, cell for cell,
// on the same pods: a change upstream fails it.
package podtable

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
)

// Column is one column of the table.
type Column struct {
	Header string
	Value  func(row Row) string
}

// Row is one pod and the node it was read from (empty when unknown).
type Row struct {
	Node string
	Pod  *v1.Pod
}

// Clock returns "now" for the AGE column; tests pin it.
type Clock func() time.Time

// The columns kubectl-like tables are built from.
var (
	Node      = Column{"NODE", func(r Row) string { return r.Node }}
	Namespace = Column{"NAMESPACE", func(r Row) string { return r.Pod.Namespace }}
	Name      = Column{"NAME", func(r Row) string { return r.Pod.Name }}
	Status    = Column{"STATUS", func(r Row) string { return PodStatus(r.Pod) }}
	Source    = Column{"SOURCE", func(r Row) string { return PodSource(r.Pod) }}
	IP        = Column{"IP", func(r Row) string { return orNone(r.Pod.Status.PodIP) }}
)

// Ready is kubectl's READY column: ready containers of all.
var Ready = Column{"READY", func(r Row) string { return Summarize(r.Pod, time.Time{}).Ready }}

// Restarts is kubectl's RESTARTS column, with the time since the last restart measured
// against now.
func Restarts(now Clock) Column {
	return Column{"RESTARTS", func(r Row) string { return Summarize(r.Pod, now()).Restarts }}
}

// Age is the AGE column, measured against now.
func Age(now Clock) Column {
	return Column{"AGE", func(r Row) string { return PodAge(r.Pod, now()) }}
}

// Print writes rows sorted by node, namespace and name under the given columns.
func Print(w io.Writer, rows []Row, columns ...Column) error {
	sorted := append([]Row(nil), rows...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Pod.Namespace != b.Pod.Namespace {
			return a.Pod.Namespace < b.Pod.Namespace
		}
		return a.Pod.Name < b.Pod.Name
	})
	tw := printers.GetNewTabWriter(w)
	headers := make([]string, len(columns))
	for i, c := range columns {
		headers[i] = c.Header
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range sorted {
		cells := make([]string, len(columns))
		for i, c := range columns {
			cells[i] = c.Value(r)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// Rows wraps pods read from one node.
func Rows(node string, pods []v1.Pod) []Row {
	rows := make([]Row, len(pods))
	for i := range pods {
		rows[i] = Row{Node: node, Pod: &pods[i]}
	}
	return rows
}

// PodStatus is kubectl's STATUS column: the pod's reason, else what its containers say
// (Init:0/1, Init:CrashLoopBackOff, CrashLoopBackOff, ContainerCreating, Completed, Error,
// OOMKilled, NotReady…), Terminating for a pod being deleted, and the phase otherwise — and
// "Unknown" where kubectl would print an empty cell. See Summarize.
func PodStatus(pod *v1.Pod) string {
	return Summarize(pod, time.Time{}).Status
}

// Summary is what kubectl's pod table says about a pod beyond its name.
type Summary struct {
	Ready    string // "1/2": ready containers of all (restartable init containers count)
	Status   string // the STATUS column
	Restarts string // "3", or "3 (5m ago)" when the last restart's time is known
}

// Summarize computes kubectl get pods' READY, STATUS and RESTARTS for a v1 Pod, as the
// apiserver's table printer does for its internal type (kubectl asks the server for the table;
// a client reading the kubelet's /pods gets bare pods and must compute it):
// pkg/printers/internalversion/printers.go#L967-L1154 (func printPod). The one
// difference: an empty STATUS becomes "Unknown". now is for the "(5m ago)" of RESTARTS; the
// zero time leaves it out. A differential test runs both on the same pods.
func Summarize(pod *v1.Pod, now time.Time) Summary {
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			reason = v1.PodReasonSchedulingGated
		}
	}
	t := &tally{total: len(pod.Spec.Containers)}
	reason, initializing := t.initContainers(pod, reason)
	if !initializing || conditionTrue(pod, v1.PodInitialized) {
		reason = t.containers(pod, reason)
	}

	switch {
	case pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost":
		reason = "Unknown"
	case pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed:
		reason = "Terminating"
	}
	if reason == "" {
		reason = "Unknown"
	}

	s := Summary{Ready: fmt.Sprintf("%d/%d", t.ready, t.total), Status: reason, Restarts: strconv.Itoa(t.restarts)}
	if t.restarts != 0 && !t.lastRestart.IsZero() && !now.IsZero() {
		s.Restarts = fmt.Sprintf("%d (%s ago)", t.restarts, duration.HumanDuration(now.Sub(t.lastRestart)))
	}
	return s
}

// tally is what printPod counts as it walks a pod's containers: READY's two numbers, and the
// restarts with the time of the last (of all containers, and of the restartable init ones).
type tally struct {
	total, ready                         int
	restarts, restartableInitRestarts    int
	lastRestart, lastRestartableInitTime time.Time
}

// later moves *t to the container's last termination, if that is later.
func later(t *time.Time, s *v1.ContainerStatus) {
	if term := s.LastTerminationState.Terminated; term != nil && t.Before(term.FinishedAt.Time) {
		*t = term.FinishedAt.Time
	}
}

// initContainers is printPod's first loop: the init containers in order, up to the first that
// has not completed (Init:N/M, Init:REASON); restartable ones (sidecars) count towards READY.
func (t *tally) initContainers(pod *v1.Pod, reason string) (string, bool) {
	spec := map[string]*v1.Container{}
	for i := range pod.Spec.InitContainers {
		spec[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if restartable(&pod.Spec.InitContainers[i]) {
			t.total++
		}
	}
	for i := range pod.Status.InitContainerStatuses {
		c := &pod.Status.InitContainerStatuses[i]
		t.restarts += int(c.RestartCount)
		later(&t.lastRestart, c)
		if restartable(spec[c.Name]) {
			t.restartableInitRestarts += int(c.RestartCount)
			later(&t.lastRestartableInitTime, c)
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case restartable(spec[c.Name]) && c.Started != nil && *c.Started:
			if c.Ready {
				t.ready++
			}
			continue
		case c.State.Terminated != nil: // initialization failed
			return "Init:" + terminated(c.State.Terminated), true
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			return "Init:" + c.State.Waiting.Reason, true
		default:
			return fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers)), true
		}
	}
	return reason, false
}

// containers is printPod's second loop: the app containers, last first, so that the first
// container's state is the one left in STATUS; "Completed" turns back into Running or NotReady
// while a container still runs.
func (t *tally) containers(pod *v1.Pod, reason string) string {
	t.restarts, t.lastRestart = t.restartableInitRestarts, t.lastRestartableInitTime
	hasRunning, errorReason := false, ""
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		c := &pod.Status.ContainerStatuses[i]
		t.restarts += int(c.RestartCount)
		later(&t.lastRestart, c)
		switch {
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			reason = c.State.Waiting.Reason
		case c.State.Terminated != nil:
			reason = terminated(c.State.Terminated)
			if c.State.Terminated.ExitCode != 0 {
				errorReason = reason
			}
		case c.Ready && c.State.Running != nil:
			hasRunning = true
			t.ready++
		}
	}
	if reason == "Completed" {
		switch {
		case hasRunning && conditionTrue(pod, v1.PodReady):
			reason = "Running"
		case errorReason != "":
			reason = errorReason
		case hasRunning:
			reason = "NotReady"
		}
	}
	return reason
}

// terminated is a terminated container's reason, else its signal, else its exit code.
func terminated(t *v1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

func restartable(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func conditionTrue(pod *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// PodAge is kubectl's AGE: the time since creationTimestamp. A static pod that the kubelet
// read from a file has no creationTimestamp (only the apiserver stamps one), so the time
// since status.startTime stands in for it; with neither, "<unknown>" as kubectl prints.
func PodAge(pod *v1.Pod, now time.Time) string {
	start := pod.CreationTimestamp.Time
	if start.IsZero() && pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	if start.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(start))
}

// PodSource says where the kubelet got the pod: the kubernetes.io/config.source annotation
// (file, http, api), with "mirror" for the apiserver's copy of a static pod.
func PodSource(pod *v1.Pod) string {
	if _, ok := pod.Annotations[v1.MirrorPodAnnotationKey]; ok {
		return "mirror"
	}
	if src, ok := pod.Annotations["kubernetes.io/config.source"]; ok { // kubetypes.ConfigSourceAnnotationKey, not imported: see the package comment
		return src
	}
	return "api"
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
