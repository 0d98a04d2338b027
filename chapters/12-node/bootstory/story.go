// Package bootstory tells the story a real node's kubelet starts with — the kubelet runs before
// any apiserver exists, starts etcd and kube-apiserver from manifest files in real containers,
// registers with the apiserver it has just started, and mirrors its static pods — from that
// node's own evidence, read through `minikube ssh`: systemd's journal, containerd's records
// (crictl) and the apiserver's. It works on any minikube node with systemd: the reader's own
// (docker driver, on Linux, macOS or Windows), or the lab's.
package bootstory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Nothing here is a fixed list of what should have happened: each event is found in the
// evidence, or the story does not have it.

// Node runs a command in the node as root and returns its standard output: what
// `minikube ssh -- sudo …` does (Minikube).
type Node interface {
	Output(ctx context.Context, args ...string) ([]byte, error)
}

// Step is one step of the story, in the order the kubelet's reading notes tell it.
type Step int

const (
	UnitWithoutConfig Step = iota // the unit starts before kubeadm has configured it, and exits
	ManifestsWritten              // kubeadm writes the static pod manifests
	KubeletRuns                   // kubeadm writes the kubelet's configuration and starts it
	NoAPIServer                   // the kubelet's calls to the apiserver are refused
	ContainersCreated             // the control plane's containers are created
	NodeRegistered                // the kubelet registers its Node
	MirrorPods                    // the mirror pods appear
	FinalRestart                  // kubeadm's kubelet-finalize phase restarts the kubelet
)

// Event is one step as the evidence shows it.
type Event struct {
	Step Step
	At   time.Time
	What string
	// Source says where the evidence comes from: "journal", "files", "crictl", "apiserver".
	Source string
}

// Story is what happened when kubeadm started the kubelet: the steps found, in the story's
// order (their times say whether they happened in it; TestBootstrapOrder checks that they did).
type Story struct {
	// KubeletStart is when systemd started the kubelet kubeadm had configured: the story's zero.
	KubeletStart time.Time
	Events       []Event
}

// Find returns the event of a step, if the evidence had one.
func (s *Story) Find(step Step) (Event, bool) {
	for _, e := range s.Events {
		if e.Step == step {
			return e, true
		}
	}
	return Event{}, false
}

// journalEntry is one line of `journalctl -o json`.
type journalEntry struct {
	Message  string `json:"MESSAGE"`
	Realtime string `json:"__REALTIME_TIMESTAMP"` // microseconds since the epoch
	PID      string `json:"_PID"`
}

func (e journalEntry) time() time.Time {
	us, _ := strconv.ParseInt(e.Realtime, 10, 64)
	return time.UnixMicro(us)
}

// journal reads a unit's journal from the node.
func journal(ctx context.Context, n Node, unit string) ([]journalEntry, error) {
	// minikube ssh gives the command a terminal, on which journalctl would color its JSON.
	out, err := n.Output(ctx, "SYSTEMD_COLORS=0", "journalctl", "--unit", unit, "--output", "json", "--no-pager")
	if err != nil {
		return nil, err
	}
	var entries []journalEntry
	s := bufio.NewScanner(bytes.NewReader(out))
	s.Buffer(make([]byte, 1<<20), 1<<24)
	for s.Scan() {
		var e journalEntry
		if json.Unmarshal(s.Bytes(), &e) == nil {
			entries = append(entries, e)
		}
	}
	return entries, s.Err()
}

// criContainer is a container as `crictl ps -a -o json` and `crictl inspect` show it.
type criContainer struct {
	ID       string `json:"id"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	CreatedAt string `json:"createdAt"` // nanoseconds since the epoch
}

// Options say what the story needs to know of the node.
type Options struct {
	// NodeName is the Node the kubelet registers (minikube: the profile's name).
	NodeName string
	// KubernetesVersion says where minikube keeps kubectl in the node
	// (/var/lib/minikube/binaries/<version>/kubectl).
	KubernetesVersion string
}

// TellStory gathers the evidence of the bootstrap.
func TellStory(ctx context.Context, n Node, opts Options) (*Story, error) {
	entries, err := journal(ctx, n, "kubelet")
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(entries, func(a, b journalEntry) int { return a.time().Compare(b.time()) })
	// systemd's own lines about the unit have PID 1; each kubelet's lines its own PID. A kubelet
	// that loaded its configuration logs "Effective KubeletConfiguration"; one that found none
	// exits with "no such file or directory".
	var failures []journalEntry
	var configured []string // the PIDs of kubelets that ran, in order
	startOf := map[string]time.Time{}
	var started time.Time
	for _, e := range entries {
		switch {
		case e.PID == "1" && strings.HasPrefix(e.Message, "Started kubelet.service"):
			started = e.time()
		case e.PID == "1":
		case strings.Contains(e.Message, "/var/lib/kubelet/config.yaml") && strings.Contains(e.Message, "no such file or directory"):
			failures = append(failures, e)
		case strings.Contains(e.Message, "Effective KubeletConfiguration") && startOf[e.PID].IsZero():
			configured = append(configured, e.PID)
			startOf[e.PID] = started
		}
	}
	if len(configured) == 0 {
		return nil, fmt.Errorf("the kubelet's journal shows no kubelet that loaded its configuration")
	}
	st := &Story{KubeletStart: startOf[configured[0]]}
	if len(failures) > 0 {
		st.add(UnitWithoutConfig, failures[0].time(), "journal", "the kubelet unit starts before kubeadm has configured it, and exits: "+
			"/var/lib/kubelet/config.yaml does not exist yet; systemd starts it again every 600 ms")
	}
	if written, err := manifestsWritten(ctx, n); err == nil {
		st.add(ManifestsWritten, written, "files", "kubeadm writes etcd.yaml, kube-apiserver.yaml, kube-controller-manager.yaml and kube-scheduler.yaml into /etc/kubernetes/manifests")
	}
	st.add(KubeletRuns, st.KubeletStart, "journal", "kubeadm writes /var/lib/kubelet/config.yaml and starts the kubelet (its kubelet-start phase): it runs, and reads the manifests")
	after := func(e journalEntry) bool { return e.PID != "1" && !e.time().Before(st.KubeletStart) }
	for _, e := range entries {
		if after(e) && strings.Contains(e.Message, ":8443") && strings.Contains(e.Message, "connection refused") {
			st.add(NoAPIServer, e.time(), "journal", "the kubelet calls the apiserver at control-plane.minikube.internal:8443: connection refused, none runs yet")
			break
		}
	}
	containers, err := containers(ctx, n)
	if err != nil {
		return nil, err
	}
	var first time.Time
	var names []string
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if c, ok := containers[name]; ok {
			names = append(names, name)
			if first.IsZero() || c.Before(first) {
				first = c
			}
		}
	}
	if len(names) > 0 {
		st.add(ContainersCreated, first, "crictl", "the kubelet has containerd and runc create the containers of "+strings.Join(names, ", ")+", from the manifests")
	}
	for _, e := range entries {
		if after(e) && strings.Contains(e.Message, "Successfully registered node") {
			st.add(NodeRegistered, e.time(), "journal", fmt.Sprintf("the kubelet registers Node %q with the apiserver it has started", opts.NodeName))
			break
		}
	}
	if at, names, err := mirrorPods(ctx, n, opts.KubernetesVersion); err != nil {
		return nil, err
	} else if len(names) > 0 {
		st.add(MirrorPods, at, "apiserver", "the kubelet mirrors its static pods into the apiserver: "+strings.Join(names, ", "))
	}
	if len(configured) > 1 {
		st.add(FinalRestart, startOf[configured[len(configured)-1]], "journal", "kubeadm restarts the kubelet (its kubelet-finalize phase): from now on its client certificate rotates")
	}
	return st, nil
}

// manifestsWritten is when kubeadm wrote the last of the four manifests.
func manifestsWritten(ctx context.Context, n Node) (time.Time, error) {
	out, err := n.Output(ctx, "stat", "--format", "%.9Y", "/etc/kubernetes/manifests/etcd.yaml", "/etc/kubernetes/manifests/kube-apiserver.yaml",
		"/etc/kubernetes/manifests/kube-controller-manager.yaml", "/etc/kubernetes/manifests/kube-scheduler.yaml")
	if err != nil {
		return time.Time{}, err
	}
	var last time.Time
	for _, f := range strings.Fields(string(out)) {
		sec, frac, _ := strings.Cut(f, ".")
		s, err1 := strconv.ParseInt(sec, 10, 64)
		ns, err2 := strconv.ParseInt(frac, 10, 64)
		if err1 != nil || err2 != nil {
			return time.Time{}, fmt.Errorf("stat: %q", f)
		}
		if t := time.Unix(s, ns); t.After(last) {
			last = t
		}
	}
	return last, nil
}

func (s *Story) add(step Step, at time.Time, source, what string) {
	s.Events = append(s.Events, Event{Step: step, At: at, What: what, Source: source})
}

// containers returns when containerd created the first container of each name.
func containers(ctx context.Context, n Node) (map[string]time.Time, error) {
	out, err := n.Output(ctx, "crictl", "ps", "--all", "--output", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Containers []criContainer `json:"containers"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("crictl ps: %w", err)
	}
	first := map[string]time.Time{}
	for _, c := range list.Containers {
		ns, err := strconv.ParseInt(c.CreatedAt, 10, 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, ns)
		if t, ok := first[c.Metadata.Name]; !ok || at.Before(t) {
			first[c.Metadata.Name] = at
		}
	}
	return first, nil
}

// mirrorPods finds the apiserver's mirror pods: when the first was created, and their names.
func mirrorPods(ctx context.Context, n Node, version string) (time.Time, []string, error) {
	out, err := n.Output(ctx, append(Kubectl(version), "get", "pods", "--all-namespaces", "-o", "json")...)
	if err != nil {
		return time.Time{}, nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string            `json:"name"`
				CreationTimestamp time.Time         `json:"creationTimestamp"`
				Annotations       map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return time.Time{}, nil, err
	}
	var first time.Time
	var names []string
	for _, p := range list.Items {
		if _, mirror := p.Metadata.Annotations["kubernetes.io/config.mirror"]; mirror {
			names = append(names, p.Metadata.Name)
			if first.IsZero() || p.Metadata.CreationTimestamp.Before(first) {
				first = p.Metadata.CreationTimestamp
			}
		}
	}
	slices.Sort(names)
	return first, names, nil
}

// Kubectl is the node's own kubectl with minikube's kubeconfig in the node, as minikube runs it
// there (pkg/minikube/bootstrapper: /var/lib/minikube/binaries/<version>/kubectl,
// /var/lib/minikube/kubeconfig).
func Kubectl(version string) []string {
	return []string{"/var/lib/minikube/binaries/" + version + "/kubectl", "--kubeconfig=/var/lib/minikube/kubeconfig"}
}

// Print writes the story in its order, each step with its time relative to the kubelet's start
// (the apiserver's timestamps have whole seconds only).
func (s *Story) Print(w io.Writer) {
	for _, e := range s.Events {
		offset := fmt.Sprintf("%+.1fs", e.At.Sub(s.KubeletStart).Seconds())
		if e.Source == "apiserver" { // whole seconds only
			offset = fmt.Sprintf("%+.0fs", e.At.Sub(s.KubeletStart.Truncate(time.Second)).Seconds())
		}
		fmt.Fprintf(w, "  %7s  %-11s  %s\n", offset, "["+e.Source+"]", e.What)
	}
}

// WaitSettled waits until every pod of kube-system is Ready and every Deployment there has rolled
// out (minikube scales CoreDNS down and may restart it: a fresh pod can appear after all were
// Ready), for two looks in a row, or until timeout, when it says which are not.
func WaitSettled(ctx context.Context, n Node, version string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	settled := 0
	var notReady []string
	for {
		out, err := n.Output(ctx, append(Kubectl(version), "get", "pods", "--namespace=kube-system", "-o", "json")...)
		if err != nil {
			return err
		}
		if notReady, err = podsNotReady(out); err != nil {
			return err
		}
		deployments, err := n.Output(ctx, append(Kubectl(version), "get", "deployments", "--namespace=kube-system", "-o", "json")...)
		if err != nil {
			return err
		}
		rolling, err := deploymentsRolling(deployments)
		if err != nil {
			return err
		}
		notReady = append(notReady, rolling...)
		if len(notReady) == 0 {
			if settled++; settled == 2 {
				return nil
			}
		} else {
			settled = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-system's pods not Ready after %s: %s", timeout, strings.Join(notReady, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// podsNotReady lists the pods of a `kubectl get pods -o json` that are not Ready; an empty list of
// pods is not settled either.
func podsNotReady(list []byte) ([]string, error) {
	var pods struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Status struct {
				Conditions []struct {
					Type, Status string
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(list, &pods); err != nil {
		return nil, fmt.Errorf("kubectl get pods: %w", err)
	}
	if len(pods.Items) == 0 {
		return []string{"(no pod yet)"}, nil
	}
	var notReady []string
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == "Ready" && c.Status == "True")
		}
		if !ready {
			notReady = append(notReady, p.Metadata.Name)
		}
	}
	return notReady, nil
}

// deploymentsRolling lists the Deployments of a `kubectl get deployments -o json` that have not
// rolled out: not yet observed, or with replicas not updated, not available, or old ones left.
func deploymentsRolling(list []byte) ([]string, error) {
	var deployments struct {
		Items []struct {
			Metadata struct {
				Name       string `json:"name"`
				Generation int64  `json:"generation"`
			} `json:"metadata"`
			Spec struct {
				Replicas *int32 `json:"replicas"`
			} `json:"spec"`
			Status struct {
				ObservedGeneration int64 `json:"observedGeneration"`
				Replicas           int32 `json:"replicas"`
				UpdatedReplicas    int32 `json:"updatedReplicas"`
				AvailableReplicas  int32 `json:"availableReplicas"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(list, &deployments); err != nil {
		return nil, fmt.Errorf("kubectl get deployments: %w", err)
	}
	var rolling []string
	for _, d := range deployments.Items {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		if st.ObservedGeneration < d.Metadata.Generation || st.UpdatedReplicas != want || st.AvailableReplicas != want || st.Replicas != want {
			rolling = append(rolling, "deployment/"+d.Metadata.Name)
		}
	}
	return rolling, nil
}
