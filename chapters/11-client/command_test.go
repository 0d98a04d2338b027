package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
)

// The lesson's four steps, on loopback fakes that record what reaches them: the Node read once,
// the kubelet asked with a minted ServiceAccount token over verified TLS, and the apiserver's
// node proxy only where the kubelet cannot be found (--via auto) — never for --via kubelet.
// Against real kubelets: e2e/client and e2e/clientnode.
func TestLessonSteps(t *testing.T) {
	pod := corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	p := fakecluster.NewPKI(t)
	kubelet := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1"), Pods: []corev1.Pod{pod}})
	addressless := fakecluster.Node("n2", kubelet.Port)
	addressless.Status.Addresses = nil

	tests := []struct {
		name, node, via string
		// want is in the output, in order; wantErr in the error.
		want          []string
		wantErr       string
		kubeletAsked  []string
		apiserverPods []string // the node proxy's requests
	}{
		{name: "the four steps", node: "n1", via: "kubelet",
			want: []string{
				fmt.Sprintf("1. discovery:    https://127.0.0.1:%d (InternalIP; port from daemonEndpoints)\n", kubelet.Port),
				"2. credentials:  a 10m0s token of the ServiceAccount kubelet-reader/kubelet-reader (TokenRequest)\n",
				"3. verified TLS: the kubelet's certificate, checked against the cluster's CA\n",
				fmt.Sprintf("4. GET https://127.0.0.1:%d/pods: 1 pods\n", kubelet.Port), "default", "web", "Running"},
			kubeletAsked: []string{"GET /pods Bearer minted-token"}},
		{name: "no address, --via auto: the node proxy", node: "n2", via: "auto",
			want: []string{"1. discovery:    node n2 has no", "the apiserver's node proxy was asked instead",
				"3. verified TLS: the apiserver's certificate", "4. GET", "web"},
			apiserverPods: []string{"GET /api/v1/nodes/n2/proxy/pods"}},
		{name: "no address, --via kubelet: the error, no proxy", node: "n2", via: "kubelet",
			wantErr: "node n2 has no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kubelet.Reset()
			a := fakecluster.NewAPIServer(t, p)
			a.SetNodes(fakecluster.Node("n1", kubelet.Port), addressless)
			a.ServiceAccount("kubelet-reader/kubelet-reader", "minted-token")
			a.Proxy(func(w http.ResponseWriter, _ *http.Request) {
				_ = json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{pod}})
			})
			t.Setenv("KUBECONFIG", "")
			cmd := NewClientCommand(context.Background())
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs([]string{"--kubeconfig", a.Kubeconfig(t, p, fakecluster.User{Token: "admin"}), "--node", tt.node, "--via", tt.via})
			err := cmd.Execute()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err, "%s", out.String())
			}
			rest := out.String()
			for _, w := range tt.want {
				i := bytes.Index([]byte(rest), []byte(w))
				require.GreaterOrEqual(t, i, 0, "%q in order in:\n%s", w, out.String())
				rest = rest[i+len(w):]
			}
			var asked []string
			for _, r := range kubelet.Requests() {
				asked = append(asked, r.Method+" "+r.Path+" "+r.Authorization)
			}
			assert.Equal(t, tt.kubeletAsked, asked, "what reached the kubelet")
			var proxied, nodeReads []string
			for _, r := range a.Requests() {
				switch r.Path {
				case "/api/v1/nodes/" + tt.node:
					nodeReads = append(nodeReads, r.Path)
				case "/api/v1/nodes/" + tt.node + "/proxy/pods":
					proxied = append(proxied, r.Method+" "+r.Path)
				}
			}
			assert.Equal(t, tt.apiserverPods, proxied, "the node proxy")
			assert.Len(t, nodeReads, 1, "the Node is read once")
		})
	}
}

// The Pods API's four steps: the socket, no credentials, its owner and mode, ListPods — with no
// kubeconfig at all. On its own node ($NODE_NAME) auto takes it, and says when it cannot.
func TestLessonPodsAPI(t *testing.T) {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	api := fakecluster.NewPodsAPI(t, fakecluster.SocketIn(fakecluster.PodsAPIDir(t)), pod)
	absent := fakecluster.SocketIn(fakecluster.PodsAPIDir(t))
	p := fakecluster.NewPKI(t)
	kubelet := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1"), Pods: []corev1.Pod{pod}})
	a := fakecluster.NewAPIServer(t, p)
	a.SetNodes(fakecluster.Node("n1", kubelet.Port))
	a.ServiceAccount("kubelet-reader/kubelet-reader", "minted-token")
	kubeconfig := a.Kubeconfig(t, p, fakecluster.User{Token: "admin"})
	tests := []struct {
		name, nodeName string
		args           []string
		want           []string
	}{
		{name: "--via podsapi", args: []string{"--kubeconfig", "/nonexistent", "--via", "podsapi", "--pods-api-socket", api.Socket},
			want: []string{"1. discovery:    unix://" + api.Socket + " (the kubelet's Pods API, on node n1)\n",
				"2. credentials:  none: the Pods API takes none; the socket's file mode decides who may connect\n",
				"3. trusted:      the socket and every directory above it are root's or yours, writable by no one else\n",
				"4. ListPods: 1 pods\n", "n1", "default", "web", "Running"}},
		{name: "auto on its own node", nodeName: "n1", args: []string{"--kubeconfig", kubeconfig, "--pods-api-socket", api.Socket},
			want: []string{"1. discovery:    unix://" + api.Socket, "4. ListPods: 1 pods\n"}},
		{name: "auto on its own node, no socket", nodeName: "n1", args: []string{"--kubeconfig", kubeconfig, "--pods-api-socket", absent},
			want: []string{"0. the Pods API: not used, the Pods API socket " + absent + ": no socket in ", "this is node n1 ($NODE_NAME): asking the kubelet over HTTPS instead\n",
				"1. discovery:    https://127.0.0.1:", "4. GET https://127.0.0.1:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "")
			t.Setenv("NODE_NAME", tt.nodeName)
			cmd := NewClientCommand(context.Background())
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append([]string{"--node", "n1"}, tt.args...))
			require.NoError(t, cmd.Execute(), "%s", out.String())
			rest := out.String()
			for _, w := range tt.want {
				i := bytes.Index([]byte(rest), []byte(w))
				require.GreaterOrEqual(t, i, 0, "%q in order in:\n%s", w, out.String())
				rest = rest[i+len(w):]
			}
		})
	}
}
