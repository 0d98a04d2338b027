package bootstory

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evidence is a node that answers from recorded outputs: the commands TellStory runs, by their
// arguments joined with spaces. The live test (TestBootstrapOrder) reads a real node.
type evidence map[string]string

func (e evidence) Output(_ context.Context, args ...string) ([]byte, error) {
	out, ok := e[strings.Join(args, " ")]
	if !ok {
		return nil, fmt.Errorf("no such command in the evidence: %s", strings.Join(args, " "))
	}
	return []byte(out), nil
}

var t0 = time.Date(2026, 12, 1, 12, 14, 7, 0, time.UTC)

// line is one journal entry, as `journalctl -o json` prints it.
func line(at time.Duration, pid, message string) string {
	return fmt.Sprintf(`{"__REALTIME_TIMESTAMP":"%d","_PID":"%s","MESSAGE":%q}`, t0.Add(at).UnixMicro(), pid, message)
}

const (
	journalCmd  = "SYSTEMD_COLORS=0 journalctl --unit kubelet --output json --no-pager"
	statCmd     = "stat --format %.9Y /etc/kubernetes/manifests/etcd.yaml /etc/kubernetes/manifests/kube-apiserver.yaml /etc/kubernetes/manifests/kube-controller-manager.yaml /etc/kubernetes/manifests/kube-scheduler.yaml"
	crictlCmd   = "crictl ps --all --output json"
	kubectlPods = "/var/lib/minikube/binaries/v1.37.2/kubectl --kubeconfig=/var/lib/minikube/kubeconfig get pods --all-namespaces -o json"
)

func fullEvidence() evidence {
	journal := strings.Join([]string{
		line(-2800*time.Millisecond, "1", "Started kubelet.service - kubelet: The Kubernetes Node Agent."),
		line(-2790*time.Millisecond, "802", `E1201 run.go:72] "command failed" err="failed to load kubelet config file, path: /var/lib/kubelet/config.yaml, error: open /var/lib/kubelet/config.yaml: no such file or directory"`),
		line(0, "1", "Started kubelet.service - kubelet: The Kubernetes Node Agent."),
		line(10*time.Millisecond, "973", "I1201 server.go:257] \"Effective KubeletConfiguration\" config=<\n address: 0.0.0.0\n>"),
		line(300*time.Millisecond, "973", `E1201 reflector.go:200] "Failed to watch" err="Get \"https://control-plane.minikube.internal:8443/api/v1/nodes\": dial tcp 192.168.49.2:8443: connect: connection refused"`),
		line(3700*time.Millisecond, "973", `I1201 kubelet_node_status.go:78] "Successfully registered node" node="minikube"`),
		line(5900*time.Millisecond, "1", "Started kubelet.service - kubelet: The Kubernetes Node Agent."),
		line(5910*time.Millisecond, "1404", "I1201 server.go:257] \"Effective KubeletConfiguration\" config=<\n>"),
		line(6000*time.Millisecond, "1404", `I1201 kubelet_node_status.go:78] "Successfully registered node" node="minikube"`),
	}, "\n")
	manifests := t0.Add(-100 * time.Millisecond)
	stamp := fmt.Sprintf("%d.%09d", manifests.Unix(), manifests.Nanosecond())
	created := func(d time.Duration) string { return fmt.Sprint(t0.Add(d).UnixNano()) }
	return evidence{
		journalCmd: journal + "\n",
		statCmd:    strings.Repeat(stamp+"\n", 4),
		crictlCmd: `{"containers":[` +
			`{"id":"a","metadata":{"name":"etcd"},"createdAt":"` + created(1100*time.Millisecond) + `"},` +
			`{"id":"b","metadata":{"name":"kube-apiserver"},"createdAt":"` + created(1200*time.Millisecond) + `"},` +
			`{"id":"c","metadata":{"name":"kube-proxy"},"createdAt":"` + created(9*time.Second) + `"}]}`,
		kubectlPods: `{"items":[` +
			`{"metadata":{"name":"kube-apiserver-minikube","creationTimestamp":"` + t0.Add(5*time.Second).Format(time.RFC3339) + `","annotations":{"kubernetes.io/config.mirror":"x"}}},` +
			`{"metadata":{"name":"etcd-minikube","creationTimestamp":"` + t0.Add(5*time.Second).Format(time.RFC3339) + `","annotations":{"kubernetes.io/config.mirror":"y"}}},` +
			`{"metadata":{"name":"coredns-1","creationTimestamp":"` + t0.Add(9*time.Second).Format(time.RFC3339) + `"}}]}`,
	}
}

func TestTellStory(t *testing.T) {
	st, err := TellStory(context.Background(), fullEvidence(), Options{NodeName: "minikube", KubernetesVersion: "v1.37.2"})
	require.NoError(t, err)
	var out bytes.Buffer
	st.Print(&out)
	assert.Equal(t, `    -2.8s  [journal]    the kubelet unit starts before kubeadm has configured it, and exits: /var/lib/kubelet/config.yaml does not exist yet; systemd starts it again every 600 ms
    -0.1s  [files]      kubeadm writes etcd.yaml, kube-apiserver.yaml, kube-controller-manager.yaml and kube-scheduler.yaml into /etc/kubernetes/manifests
    +0.0s  [journal]    kubeadm writes /var/lib/kubelet/config.yaml and starts the kubelet (its kubelet-start phase): it runs, and reads the manifests
    +0.3s  [journal]    the kubelet calls the apiserver at control-plane.minikube.internal:8443: connection refused, none runs yet
    +1.1s  [crictl]     the kubelet has containerd and runc create the containers of etcd, kube-apiserver, from the manifests
    +3.7s  [journal]    the kubelet registers Node "minikube" with the apiserver it has started
      +5s  [apiserver]  the kubelet mirrors its static pods into the apiserver: etcd-minikube, kube-apiserver-minikube
    +5.9s  [journal]    kubeadm restarts the kubelet (its kubelet-finalize phase): from now on its client certificate rotates
`, out.String())
}

// What the evidence does not show, the story does not tell; what TellStory cannot read at all is
// an error that says which command failed.
func TestTellStoryFromPartialEvidence(t *testing.T) {
	tests := []struct {
		name    string
		change  func(evidence)
		missing []Step
		err     string
	}{
		{name: "a kubelet that never ran without its configuration (restarted profile, rotated journal)", change: func(e evidence) {
			e[journalCmd] = strings.Join(strings.Split(e[journalCmd], "\n")[2:], "\n")
		}, missing: []Step{UnitWithoutConfig}},
		{name: "the manifests' times unreadable", change: func(e evidence) { delete(e, statCmd) }, missing: []Step{ManifestsWritten}},
		{name: "no mirror pods", change: func(e evidence) { e[kubectlPods] = `{"items":[]}` }, missing: []Step{MirrorPods}},
		{name: "a journal without any configured kubelet", change: func(e evidence) { e[journalCmd] = line(0, "1", "Started kubelet.service") + "\n" },
			err: "the kubelet's journal shows no kubelet that loaded its configuration"},
		{name: "crictl fails", change: func(e evidence) { delete(e, crictlCmd) }, err: "no such command in the evidence: crictl ps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := fullEvidence()
			tt.change(e)
			st, err := TellStory(context.Background(), e, Options{NodeName: "minikube", KubernetesVersion: "v1.37.2"})
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			for _, step := range tt.missing {
				_, found := st.Find(step)
				assert.False(t, found, "step %d", step)
			}
			assert.Len(t, st.Events, 8-len(tt.missing))
		})
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"journalctl":        "journalctl",
		"SYSTEMD_COLORS=0":  "SYSTEMD_COLORS=0",
		"--kubeconfig=/a/b": "--kubeconfig=/a/b",
		"nodes,pods":        "nodes,pods",
		"%.9Y":              "%.9Y",
		"two words":         "'two words'",
		"it's":              `'it'\''s'`,
		"":                  "''",
		"$(rm -rf /)":       "'$(rm -rf /)'",
		"a;b":               "'a;b'",
	} {
		assert.Equal(t, want, shellQuote(in), in)
	}
}

func TestPodsNotReady(t *testing.T) {
	pod := func(name, ready string) string {
		return `{"metadata":{"name":"` + name + `"},"status":{"conditions":[{"type":"Ready","status":"` + ready + `"}]}}`
	}
	tests := []struct {
		name, list string
		want       []string
	}{
		{"all Ready", `{"items":[` + pod("etcd-minikube", "True") + `,` + pod("coredns-1", "True") + `]}`, nil},
		{"one starting", `{"items":[` + pod("etcd-minikube", "True") + `,` + pod("coredns-2", "False") + `]}`, []string{"coredns-2"}},
		{"no condition yet", `{"items":[{"metadata":{"name":"kube-proxy-x"},"status":{}}]}`, []string{"kube-proxy-x"}},
		{"no pod yet", `{"items":[]}`, []string{"(no pod yet)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := podsNotReady([]byte(tt.list))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDeploymentsRolling(t *testing.T) {
	d := func(name string, gen, observed int64, replicas, status, updated, available int32) string {
		return fmt.Sprintf(`{"metadata":{"name":%q,"generation":%d},"spec":{"replicas":%d},"status":{"observedGeneration":%d,"replicas":%d,"updatedReplicas":%d,"availableReplicas":%d}}`,
			name, gen, replicas, observed, status, updated, available)
	}
	tests := []struct {
		name, list string
		want       []string
	}{
		{"rolled out", `{"items":[` + d("coredns", 3, 3, 1, 1, 1, 1) + `]}`, nil},
		{"scaled down, the old pod still there", `{"items":[` + d("coredns", 2, 2, 1, 2, 1, 1) + `]}`, []string{"deployment/coredns"}},
		{"restarted, the new pod not available yet", `{"items":[` + d("coredns", 4, 4, 1, 2, 1, 1) + `,` + d("other", 1, 1, 1, 1, 1, 0) + `]}`, []string{"deployment/coredns", "deployment/other"}},
		{"not yet observed", `{"items":[` + d("coredns", 5, 4, 1, 1, 1, 1) + `]}`, []string{"deployment/coredns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := deploymentsRolling([]byte(tt.list))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
