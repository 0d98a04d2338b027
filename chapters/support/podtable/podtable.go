// Package podtable prints pods the way `kubectl get pods` lays them out: upper-case headers,
// columns padded by cli-runtime's tab writer, ages as kubectl's human durations.
//
// It is light on purpose (API types and cli-runtime only) so that the client chapter can use it
// without pulling in the kubelet.
package podtable

import (
	"fmt"
	"io"
	"sort"
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

// PodStatus is a short form of kubectl's STATUS column: Terminating for a pod being deleted,
// the pod's reason if it has one, the first waiting container's reason while the pod is
// Pending, and the phase otherwise.
func PodStatus(pod *v1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "Terminating"
	}
	if pod.Status.Reason != "" {
		return pod.Status.Reason
	}
	if pod.Status.Phase == v1.PodPending {
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
				return cs.State.Waiting.Reason
			}
		}
	}
	if pod.Status.Phase == "" {
		return "Unknown"
	}
	return string(pod.Status.Phase)
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
	if src, ok := pod.Annotations["kubernetes.io/config.source"]; ok {
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
