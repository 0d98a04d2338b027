package agent_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

var pods = kubeletclient.ReadEndpoints["pods"]

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
			results, err := agent.AllNodes(context.Background(), c, pods, 4, 0)
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

// --all-nodes never has more than --concurrency requests in flight, and uses all of them. The
// kubelet holds each request until a whole batch is in flight (batches), so the test does not
// count on requests overlapping in time: a client that asks fewer at once never fills a batch
// and shows it, however slow the machine.
func TestAllNodesConcurrencyBound(t *testing.T) {
	const nodes = 12
	_, k, cfg, p := cluster(t, nodes)
	opts := options(p, t)
	opts.Timeout = 2 * patience // no request times out while its batch waits
	c, err := kubeletclient.New(cfg, opts)
	require.NoError(t, err)
	for _, limit := range []int{1, 3, 5} {
		k.Reset()
		k.Hold(newBatches(limit, nodes).hold)
		results, err := agent.AllNodes(context.Background(), c, pods, limit, 0)
		require.NoError(t, err)
		for _, r := range results {
			require.NoError(t, r.Err)
		}
		assert.Equal(t, limit, k.MaxInFlight(), "--concurrency=%d", limit)
	}
}

// batches holds requests until size of them are held at once, then lets them all go; the last
// ones go once n requests have come in all. If a batch does not fill within patience — a client
// asking fewer at once than it should — every request goes at once from then on, so that the
// test fails quickly instead of hanging.
type batches struct {
	mu            sync.Mutex
	size, n       int
	held, arrived int
	release       chan struct{}
	gaveUp        chan struct{}
	giveUp        sync.Once
}

const patience = 10 * time.Second

func newBatches(size, n int) *batches {
	return &batches{size: size, n: n, release: make(chan struct{}), gaveUp: make(chan struct{})}
}

func (b *batches) hold(ctx context.Context) {
	b.mu.Lock()
	b.held++
	b.arrived++
	release := b.release
	if b.held == b.size || b.arrived == b.n {
		close(b.release)
		b.release, b.held = make(chan struct{}), 0
	}
	b.mu.Unlock()
	select {
	case <-release:
	case <-b.gaveUp:
	case <-ctx.Done():
	case <-time.After(patience):
		b.giveUp.Do(func() { close(b.gaveUp) })
	}
}

// The overall deadline: when it passes, AllNodes hangs up on the node it is asking, says which
// nodes were not answered, asks no other, and returns. The first node's kubelet answers at
// once; the others' would answer a minute later, and no request timeout ends a request before
// that. What is checked is the order of events — the client hung up before that kubelet
// answered — that the deadline was not cut short, and that AllNodes returned long before the slow
// kubelets would have answered (half their minute: waiting for them is the failure, not a slow
// machine): never how quickly the machine got there. The deadline is generous enough for the
// first node to answer on a loaded machine.
func TestAllNodesDeadline(t *testing.T) {
	const deadline, slowAnswer = 2 * time.Second, time.Minute
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	fast := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1"), Pods: []corev1.Pod{pod}})
	slow := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1"), Pods: []corev1.Pod{pod}})
	slow.Answer(0, "", slowAnswer, nil)
	nodes := []corev1.Node{fakecluster.Node("n00", fast.Port)}
	for i := 1; i < 6; i++ {
		nodes = append(nodes, fakecluster.Node(fmt.Sprintf("n%02d", i), slow.Port))
	}
	a.SetNodes(nodes...)
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}, BearerToken: "admin"}
	opts := options(p, t)
	opts.Timeout = 2 * slowAnswer
	c, err := kubeletclient.New(cfg, opts)
	require.NoError(t, err)

	start := time.Now()
	var results []kubeletclient.Result
	done := make(chan error, 1)
	go func() {
		var err error
		results, err = agent.AllNodes(context.Background(), c, pods, 1, deadline)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(slowAnswer / 2):
		t.Fatalf("AllNodes did not return within %s, half the slow kubelets' answer time: its deadline (%s) did not end it", slowAnswer/2, deadline)
	}
	assert.GreaterOrEqual(t, time.Since(start), deadline, "the deadline is not cut short")
	require.Eventually(t, func() bool { return slow.Abandoned() == 1 }, slowAnswer/2, 10*time.Millisecond,
		"the client hangs up on n01's kubelet before it answers")
	assert.Len(t, slow.Requests(), 1, "no node is asked after the deadline")

	require.Len(t, results, 6)
	assert.NoError(t, results[0].Err, "n00 answers at once, well within the deadline")
	for _, r := range results[1:] {
		var e *agent.Error
		require.ErrorAs(t, r.Err, &e, r.Node)
		assert.Equal(t, agent.Deadline, e.Kind, r.Node)
		assert.Contains(t, r.Err.Error(), "timed out after 2s (--all-nodes-timeout)", r.Node)
	}
	assert.NotContains(t, results[1].Err.Error(), "was not asked in time", "n01 was asked: the deadline cut its request")
	assert.Contains(t, results[2].Err.Error(), "node n02 was not asked in time")
}

// On the proxy path the kubelet sees the apiserver's identity: a 401 or 403 it gives is
// relayed in its own plain text, and is about that identity, not the reader's RBAC.
func TestProxyErrorsBlameTheRightParty(t *testing.T) {
	a, _, cfg, p := cluster(t, 1)
	tests := []struct {
		name      string
		proxy     http.HandlerFunc
		wantKind  agent.Kind
		wantParty agent.Party
		wantErr   string
		wantHint  string
	}{
		{"the kubelet refuses the apiserver's identity",
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[pods proxy])")
			},
			agent.Forbidden, agent.PartyAPIServer,
			"403 Forbidden, relayed from the kubelet: Forbidden (user=kube-apiserver-kubelet-client",
			"refused the apiserver's own kubelet-client identity (kube-apiserver-kubelet-client) — not yours"},
		{"the kubelet does not know the apiserver's certificate",
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, "Unauthorized")
			},
			agent.Unauthorized, agent.PartyAPIServer,
			"401 Unauthorized, relayed from the kubelet: Unauthorized",
			"did not accept the apiserver's own kubelet-client identity — not yours"},
		{"the apiserver refuses the reader: nodes/proxy",
			func(w http.ResponseWriter, _ *http.Request) {
				fakecluster.WriteStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
					`nodes "n00" is forbidden: User "system:serviceaccount:kubelet-reader:kubelet-reader" cannot get resource "nodes/proxy" in API group "" at the cluster scope`)
			},
			agent.Forbidden, agent.PartyClient,
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
			var e *agent.Error
			require.ErrorAs(t, agent.Explain(context.Background(), c, r.Err), &e)
			assert.Equal(t, tt.wantKind, e.Kind)
			assert.Equal(t, tt.wantParty, e.Party)
			assert.Contains(t, e.Error(), tt.wantErr)
			assert.Contains(t, e.Hint, tt.wantHint)
		})
	}
}

// A kubelet reached by its IP and checked for its hostname times out: the error names both.
// It never answers in time: the timeout is generous enough for the TLS handshake on a loaded
// machine, and the kubelet would answer a minute later.
func TestTLSServerNameInTimeouts(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	k := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "node-host")})
	k.Answer(0, "", time.Minute, nil)
	a.SetNodes(fakecluster.Node("n1", k.Port, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-host"}))
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}}
	opts := options(p, t)
	opts.TLSServerName, opts.Timeout = "Hostname", 2*time.Second
	c, err := kubeletclient.New(cfg, opts)
	require.NoError(t, err)
	r := c.Pods(context.Background(), "n1")
	var rerr *kubeletclient.RequestError
	require.ErrorAs(t, r.Err, &rerr)
	assert.True(t, rerr.Connected, "the kubelet accepted the connection")
	assert.False(t, rerr.Unreachable(), "no failover: the proxy would wait for the same kubelet")
	var e *agent.Error
	require.ErrorAs(t, agent.Explain(context.Background(), c, r.Err), &e)
	assert.Equal(t, agent.Timeout, e.Kind)
	assert.Equal(t, "node-host", e.ServerName)
	assert.True(t, strings.HasPrefix(e.Error(), fmt.Sprintf("timed out after 2s waiting for https://127.0.0.1:%d/pods (certificate checked for node-host) to answer (connected)", k.Port)), e.Error())
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
				results, err := agent.AllNodes(ctx, c, pods, 8, 0)
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
				if _, err := agent.AllNodes(ctx, c, pods, 8, 0); err != nil {
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

// An explained error says the kubelet was unreachable exactly when the client's request did —
// the verdict that decides the failover to the apiserver's node proxy, not a second one.
func TestUnreachableIsTheClientsVerdict(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	// A port nothing listens on: taken, then freed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	slow := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1")})
	slow.Answer(0, "", time.Minute, nil)
	forbidden := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1")})
	forbidden.Answer(http.StatusForbidden, "Forbidden (user=x, verb=get, resource=nodes, subresource(s)=[pods])", 0, nil)
	a.SetNodes(fakecluster.Node("closed", closed), fakecluster.Node("slow", slow.Port), fakecluster.Node("forbidden", forbidden.Port))
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}}

	tests := []struct {
		node            string
		wantKind        agent.Kind
		wantUnreachable bool
	}{
		{"closed", agent.Refused, true},
		{"slow", agent.Timeout, false},
		{"forbidden", agent.Forbidden, false},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			opts := options(p, t)
			opts.KubeletCAFile, opts.Timeout = p.CAFile, time.Second
			c, err := kubeletclient.New(cfg, opts)
			require.NoError(t, err)
			r := c.Pods(context.Background(), tt.node)
			var rerr *kubeletclient.RequestError
			require.ErrorAs(t, r.Err, &rerr)
			var e *agent.Error
			require.ErrorAs(t, agent.Explain(context.Background(), c, r.Err), &e)
			assert.Equal(t, tt.wantKind, e.Kind)
			assert.Equal(t, tt.wantUnreachable, rerr.Unreachable(), "the client's verdict")
			assert.Equal(t, rerr.Unreachable(), e.Unreachable(), "the explained error's")
		})
	}
}
