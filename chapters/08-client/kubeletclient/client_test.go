package kubeletclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-client/fakecluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/benchratio"
)

// cluster is a fake apiserver with n Nodes, all served by one fake kubelet.
func cluster(t *testing.T, n int) (*fakecluster.APIServer, *fakecluster.Kubelet, *rest.Config, *fakecluster.PKI) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	k := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1", "node-host"), Pods: []corev1.Pod{pod}})
	var nodes []corev1.Node
	for i := range n {
		nodes = append(nodes, fakecluster.Node(fmt.Sprintf("n%02d", i), k.Port))
	}
	a.SetNodes(nodes...)
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}, BearerToken: "admin"}
	return a, k, cfg, p
}

func options(p *fakecluster.PKI, t *testing.T) kubeletclient.Options {
	return kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: fakecluster.TokenFile(t, "reader-token"),
		ServiceAccountDir: t.TempDir(), Via: kubeletclient.ViaKubelet}
}

// Discovery costs the apiserver one LIST for all nodes, and no GET per node: before, it was one
// LIST and then one GET per node (N+1).
func TestAllNodesListsOnce(t *testing.T) {
	for _, n := range []int{1, 5, 20} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			a, k, cfg, p := cluster(t, n)
			c, err := kubeletclient.New(cfg, options(p, t))
			require.NoError(t, err)
			results, err := c.AllNodes(context.Background(), 4)
			require.NoError(t, err)
			require.Len(t, results, n)
			for _, r := range results {
				require.NoError(t, r.Err)
			}
			var asked []string
			for _, req := range a.Requests() {
				asked = append(asked, req.Method+" "+req.Path)
			}
			assert.Equal(t, []string{"GET /api/v1/nodes"}, asked, "one LIST, whatever the number of nodes")
			assert.Len(t, k.Requests(), n, "one request per kubelet")
		})
	}
}

// --all-nodes never has more than --concurrency requests in flight, and uses all of them.
func TestAllNodesConcurrencyBound(t *testing.T) {
	_, k, cfg, p := cluster(t, 12)
	k.Answer(0, "", 150*time.Millisecond, nil)
	c, err := kubeletclient.New(cfg, options(p, t))
	require.NoError(t, err)
	for _, limit := range []int{1, 3, 5} {
		k.Reset()
		results, err := c.AllNodes(context.Background(), limit)
		require.NoError(t, err)
		for _, r := range results {
			require.NoError(t, r.Err)
		}
		assert.Equal(t, limit, k.MaxInFlight(), "--concurrency=%d", limit)
	}
}

// The overall deadline: nodes not answered in time say so, and AllNodes returns in time.
func TestAllNodesDeadline(t *testing.T) {
	_, k, cfg, p := cluster(t, 6)
	k.Answer(0, "", 300*time.Millisecond, nil)
	opts := options(p, t)
	opts.AllNodesTimeout = 500 * time.Millisecond
	c, err := kubeletclient.New(cfg, opts)
	require.NoError(t, err)
	start := time.Now()
	results, err := c.AllNodes(context.Background(), 1)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 1500*time.Millisecond)
	var answered, late int
	for _, r := range results {
		var e *kubeletclient.Error
		switch {
		case r.Err == nil:
			answered++
		case errors.As(r.Err, &e) && e.Kind == kubeletclient.Deadline:
			late++
			assert.Contains(t, r.Err.Error(), "timed out after 500ms (--all-nodes-timeout)")
		default:
			t.Errorf("%s: %v", r.Node, r.Err)
		}
	}
	assert.Equal(t, 1, answered, "one node answers in 300ms, one at a time, within 500ms")
	assert.Equal(t, 5, late)
}

// On the proxy path the kubelet sees the apiserver's identity: a 401 or 403 it gives is
// relayed in its own plain text, and is about that identity, not the reader's RBAC.
func TestProxyErrorsBlameTheRightParty(t *testing.T) {
	a, _, cfg, p := cluster(t, 1)
	tests := []struct {
		name      string
		proxy     http.HandlerFunc
		wantKind  kubeletclient.Kind
		wantParty kubeletclient.Party
		wantErr   string
		wantHint  string
	}{
		{"the kubelet refuses the apiserver's identity",
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[pods proxy])")
			},
			kubeletclient.Forbidden, kubeletclient.PartyAPIServer,
			"403 Forbidden, relayed from the kubelet: Forbidden (user=kube-apiserver-kubelet-client",
			"refused the apiserver's own kubelet-client identity (kube-apiserver-kubelet-client) — not yours"},
		{"the kubelet does not know the apiserver's certificate",
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, "Unauthorized")
			},
			kubeletclient.Unauthorized, kubeletclient.PartyAPIServer,
			"401 Unauthorized, relayed from the kubelet: Unauthorized",
			"did not accept the apiserver's own kubelet-client identity — not yours"},
		{"the apiserver refuses the reader: nodes/proxy",
			func(w http.ResponseWriter, _ *http.Request) {
				fakecluster.WriteStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
					`nodes "n00" is forbidden: User "system:serviceaccount:kubelet-reader:kubelet-reader" cannot get resource "nodes/proxy" in API group "" at the cluster scope`)
			},
			kubeletclient.Forbidden, kubeletclient.PartyClient,
			`cannot get resource "nodes/proxy"`,
			"kubectl apply -f examples/rbac/node-proxy/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.Proxy(tt.proxy)
			opts := options(p, t)
			opts.Via, opts.Auth, opts.TokenFile = kubeletclient.ViaAPIServer, "", ""
			c, err := kubeletclient.New(cfg, opts)
			require.NoError(t, err)
			r := c.Pods(context.Background(), "n00")
			var e *kubeletclient.Error
			require.ErrorAs(t, r.Err, &e)
			assert.Equal(t, tt.wantKind, e.Kind)
			assert.Equal(t, tt.wantParty, e.Party)
			assert.Contains(t, e.Error(), tt.wantErr)
			assert.Contains(t, e.Hint, tt.wantHint)
		})
	}
}

// --kubelet-tls-server-name: dial the InternalIP, check the certificate against the Node's
// hostname — minikube's hostname-only certificate, verified, without /etc/hosts.
func TestTLSServerName(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	k := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "node-host")}) // no IP SAN
	a.SetNodes(fakecluster.Node("n1", k.Port, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-host"}))
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}}

	dialed := fmt.Sprintf("https://127.0.0.1:%d/pods", k.Port)
	tests := []struct {
		serverName string
		wantErr    string
	}{
		{"", `Get "` + dialed + `": tls: failed to verify certificate: x509: cannot validate certificate for 127.0.0.1`},
		{"", "The kubelet's certificate is not valid for 127.0.0.1"},
		{"Hostname", ""},
		{"hostname", ""},
		{"node-host", ""},
		{"InternalDNS", "node n1 has no InternalDNS address"},
		// The URL dialed, and the name checked — not a URL with a host nobody dialed.
		{"other-host", `Get "` + dialed + `" (certificate checked for other-host): tls: failed to verify certificate: x509: certificate is valid for node-host, not other-host`},
	}
	for _, tt := range tests {
		t.Run(tt.serverName, func(t *testing.T) {
			opts := options(p, t)
			opts.TLSServerName = tt.serverName
			c, err := kubeletclient.New(cfg, opts)
			require.NoError(t, err)
			k.Reset()
			r := c.Pods(context.Background(), "n1")
			if tt.wantErr != "" {
				require.Error(t, r.Err)
				assert.Contains(t, r.Err.Error(), tt.wantErr)
				assert.NotContains(t, r.Err.Error(), "https://other-host", "a URL nobody dialed")
				return
			}
			require.NoError(t, r.Err)
			assert.Equal(t, "node-host", r.ServerName)
			assert.True(t, strings.HasPrefix(r.URL, "https://127.0.0.1:"), "the address dialed is the InternalIP: %s", r.URL)
			assert.Equal(t, []string{"Bearer reader-token"}, func() (out []string) {
				for _, req := range k.Requests() {
					out = append(out, req.Authorization)
				}
				return
			}())
		})
	}
}

// A kubelet reached by its IP and checked for its hostname times out: the error names both.
func TestTLSServerNameInTimeouts(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	k := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "node-host")})
	k.Answer(0, "", 2*time.Second, nil)
	a.SetNodes(fakecluster.Node("n1", k.Port, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-host"}))
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}}
	opts := options(p, t)
	opts.TLSServerName, opts.Timeout = "Hostname", 200*time.Millisecond
	c, err := kubeletclient.New(cfg, opts)
	require.NoError(t, err)
	r := c.Pods(context.Background(), "n1")
	var e *kubeletclient.Error
	require.ErrorAs(t, r.Err, &e)
	assert.Equal(t, kubeletclient.Timeout, e.Kind)
	assert.Equal(t, "node-host", e.ServerName)
	assert.True(t, strings.HasPrefix(e.Error(), fmt.Sprintf("timed out after 200ms waiting for https://127.0.0.1:%d/pods (certificate checked for node-host) to answer (connected)", k.Port)), e.Error())
}

// BenchmarkDiscovery puts discovery's cost to the apiserver side by side, per poll of every
// node: the way before this chapter's fix (a LIST, then a GET per node to find its endpoint)
// against one LIST. It reports apiserver requests per poll next to the time; the informer of
// --interval, which needs a real watch, is measured in e2e (TestDiscoveryCostPerPoll: none).
// "after" reports both ratios, x-before/after (time) and x-requests:before/after.
func BenchmarkDiscovery(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		var times benchratio.Sides
		requests := benchratio.Sides{Of: "requests"}
		p := fakecluster.NewPKI(b)
		a := fakecluster.NewAPIServer(b, p)
		k := fakecluster.NewKubelet(b, fakecluster.KubeletOptions{TLS: p.ServingConfig(b, "127.0.0.1")})
		var nodes []corev1.Node
		for i := range n {
			nodes = append(nodes, fakecluster.Node(fmt.Sprintf("n%03d", i), k.Port))
		}
		a.SetNodes(nodes...)
		cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}, QPS: -1}
		c, err := kubeletclient.New(cfg, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: fakecluster.TokenFile(b, "t"),
			ServiceAccountDir: b.TempDir(), Via: kubeletclient.ViaKubelet})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		// before: a LIST, then a GET per node (list-then-get-each); after: one LIST.
		b.Run(fmt.Sprintf("nodes=%d/before", n), func(b *testing.B) {
			a.Reset()
			for b.Loop() {
				results, err := c.AllNodes(ctx, 8)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range results {
					if _, err := c.Endpoint(ctx, r.Node); err != nil { // the GET the old AllNodes made per node
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(a.Requests()))/float64(b.N), "apiserver-requests/poll")
			times.Time(b, "before")
			requests.Set("before", float64(len(a.Requests()))/float64(b.N))
		})
		b.Run(fmt.Sprintf("nodes=%d/after", n), func(b *testing.B) {
			a.Reset()
			for b.Loop() {
				if _, err := c.AllNodes(ctx, 8); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(a.Requests()))/float64(b.N), "apiserver-requests/poll")
			times.Time(b, "after")
			times.Report(b, "before", "after")
			requests.Set("after", float64(len(a.Requests()))/float64(b.N))
			requests.Report(b, "before", "after")
		})
	}
}
