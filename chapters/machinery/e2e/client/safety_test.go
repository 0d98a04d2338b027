package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/pki"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/reviewserver"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// Outside a pod, --auth=auto mints a 10-minute token for examples/rbac's kubelet-reader, and
// real kubelets accept it (TokenReview, then a SubjectAccessReview for nodes/pods) — while the
// admin's own credentials stay with the apiserver. The reader may not use the node proxy until
// the opt-in role of examples/rbac/node-proxy is applied.
func TestLeastPrivilegeOnTheMiniCluster(t *testing.T) {
	c := miniCluster(t)
	ctx := context.Background()
	admin := adminConfig(t, c)
	applyRBAC(t, c)

	t.Run("auto: a minted ServiceAccount token reads every kubelet", func(t *testing.T) {
		client, err := kubeletclient.New(admin, kubeletclient.Options{ServiceAccountDir: t.TempDir(), Via: kubeletclient.ViaKubelet})
		require.NoError(t, err)
		assert.Contains(t, client.Credentials, "ServiceAccount kubelet-reader/kubelet-reader (TokenRequest)")
		// Every kubelet of the cluster answers with its pods: no answer at all is no success. (A
		// fresh binding may take a moment to reach the authorizer; other tests' ghost nodes, with
		// no kubelet behind them, are not judged here.)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			results, err := agent.AllNodes(ctx, client, kubeletclient.ReadEndpoints["pods"], 2, 0)
			require.NoError(c, err)
			pods := map[string]int{}
			for _, r := range results {
				if r.Node == "node-a" || r.Node == "node-b" {
					assert.NoError(c, r.Err, r.Node)
					pods[r.Node] = len(r.Pods)
				}
			}
			assert.Equal(c, map[string]int{"node-a": 5, "node-b": 5}, pods, "each kubelet's five static pods")
		}, 30*time.Second, 200*time.Millisecond)
	})

	reader := rest.CopyConfig(admin)
	reader.CertData, reader.KeyData, reader.CertFile, reader.KeyFile = nil, nil, "", ""
	reader.BearerTokenFile = tokenFile(t, c, "kubelet-reader", "kubelet-reader")

	t.Run("the reader may not use the node proxy: nodes/proxy is opt-in", func(t *testing.T) {
		client, err := kubeletclient.New(reader, kubeletclient.Options{Via: kubeletclient.ViaAPIServer})
		require.NoError(t, err)
		r := client.Pods(ctx, "node-a")
		var e *agent.Error
		require.ErrorAs(t, agent.Explain(context.Background(), client, r.Err), &e)
		assert.Equal(t, agent.Forbidden, e.Kind)
		assert.Equal(t, agent.PartyClient, e.Party, "the apiserver refused the reader itself")
		assert.Contains(t, e.Hint, "kubectl apply -f examples/rbac/node-proxy/")
	})

	t.Run("with examples/rbac/node-proxy applied, it may", func(t *testing.T) {
		apply(t, c, repo.Path("examples", "rbac", "node-proxy"))
		t.Cleanup(func() {
			_ = c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, "kubelet-reader-node-proxy", metav1.DeleteOptions{})
			authorized(t, c, "kubelet-reader", "proxy", false) // as other tests expect it
		})
		authorized(t, c, "kubelet-reader", "proxy", true)
		client, err := kubeletclient.New(reader, kubeletclient.Options{Via: kubeletclient.ViaAPIServer})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			r := client.Pods(ctx, "node-a")
			require.NoError(c, r.Err)
			assert.Equal(c, "apiserver", r.Via)
			assert.Len(c, r.Pods, 5, "node-a's five static pods")
		}, 30*time.Second, 200*time.Millisecond)
	})
}

// countingConfig counts the requests a rest.Config's transport sends to the apiserver.
func countingConfig(admin *rest.Config) (*rest.Config, *atomic.Int64) {
	var n atomic.Int64
	cfg := rest.CopyConfig(admin)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(req)
		})
	})
	return cfg, &n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Discovery's cost to the apiserver, per poll: one request when each poll lists (before this
// change, --all-nodes sent a LIST and then a GET per node), none with the informer that
// --interval starts (one watch, opened once).
func TestDiscoveryCostPerPoll(t *testing.T) {
	c := miniCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const polls = 10
	for _, informer := range []bool{false, true} {
		cfg, requests := countingConfig(adminConfig(t, c))
		client, err := kubeletclient.New(cfg, kubeletclient.Options{Auth: kubeletclient.AuthKubeconfig, Via: kubeletclient.ViaKubelet})
		require.NoError(t, err)
		if informer {
			require.NoError(t, client.WatchNodes(ctx, ""))
		}
		requests.Store(0)
		for range polls {
			results, err := agent.AllNodes(ctx, client, kubeletclient.ReadEndpoints["pods"], 4, 0)
			require.NoError(t, err)
			require.NotEmpty(t, results)
		}
		if informer {
			assert.Zero(t, requests.Load(), "with the informer, polls cost the apiserver nothing")
		} else {
			assert.Equal(t, int64(polls), requests.Load(), "one LIST per poll, whatever the number of nodes")
		}
	}
	t.Run("one node, watched by name", func(t *testing.T) {
		cfg, requests := countingConfig(adminConfig(t, c))
		client, err := kubeletclient.New(cfg, kubeletclient.Options{Auth: kubeletclient.AuthKubeconfig, Via: kubeletclient.ViaKubelet})
		require.NoError(t, err)
		require.NoError(t, client.WatchNodes(ctx, "node-b"))
		requests.Store(0)
		for range polls {
			require.NoError(t, client.Pods(ctx, "node-b").Err)
		}
		assert.Zero(t, requests.Load())
		r := client.Pods(ctx, "node-a")
		require.Error(t, r.Err, "only node-b is watched")
		assert.Contains(t, r.Err.Error(), `nodes "node-a" not found`)
	})
}

// On the proxy path the kubelet sees the apiserver's kubelet-client identity. A kubelet whose
// authorizer does not allow that identity answers the apiserver 403, in plain text; the
// apiserver relays it, and the client blames the apiserver's identity — not the reader's RBAC.
// The kubelet here is real: it trusts the cluster CA for client certificates (so it knows the
// apiserver as kube-apiserver-kubelet-client) and asks a review server that allows no one.
func TestProxyBlamesTheAPIServersIdentity(t *testing.T) {
	c := miniCluster(t)
	ctx := context.Background()
	ip, _ := netns.Inside()
	dir := t.TempDir()
	serving, err := c.CA.Issue(pki.Request{CommonName: "strict", IPs: []net.IP{net.ParseIP(ip)}, Server: true})
	require.NoError(t, err)
	certFile, keyFile, err := serving.Write(dir, "serving")
	require.NoError(t, err)
	reviews := reviewserver.Start(nil, nil) // knows no token, allows nothing
	t.Cleanup(reviews.Close)
	reviewClient, err := reviews.Client()
	require.NoError(t, err)
	k, err := realkubelet.Start(ctx, realkubelet.Options{
		NodeName: "strict", StaticPodPath: repo.Path("examples", "static-pods"), Address: ip, ReadOnlyPort: -1,
		TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: c.CAFile, Webhook: true, AuthClient: reviewClient,
	})
	require.NoError(t, err)
	t.Cleanup(k.Stop)

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "strict"}}
	_, err = c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Client.CoreV1().Nodes().Delete(ctx, "strict", metav1.DeleteOptions{}) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = k.Config.Port
	_, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)

	client, err := kubeletclient.New(adminConfig(t, c), kubeletclient.Options{Via: kubeletclient.ViaAPIServer})
	require.NoError(t, err)
	r := client.Pods(ctx, "strict")
	var e *agent.Error
	require.True(t, errors.As(agent.Explain(context.Background(), client, r.Err), &e), "%v", r.Err)
	assert.Equal(t, agent.Forbidden, e.Kind)
	assert.Equal(t, agent.PartyAPIServer, e.Party)
	assert.Contains(t, e.Error(), "relayed from the kubelet: Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[pods proxy])")
	assert.Contains(t, e.Hint, "not yours")
	assert.Contains(t, reviews.Asked(), "get nodes/pods", "the kubelet asked its authorizer about the apiserver's identity")
}
