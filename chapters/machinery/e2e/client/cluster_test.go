package client

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-minicluster/minicluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/satoken"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

var (
	cluster        *minicluster.Cluster
	clusterStarted bool
	clusterOnce    sync.Once
	clusterErr     error
)

// miniCluster is the package's shared mini-cluster: two nodes, started on first use, inside
// the private network namespace.
func miniCluster(t *testing.T) *minicluster.Cluster {
	t.Helper()
	tier.Require(t, "private network", noNetns)
	ip, _ := netns.Inside()
	clusterOnce.Do(func() {
		cluster, clusterErr = minicluster.Start(context.Background(), minicluster.Options{
			NodeNames: []string{"node-a", "node-b"}, NodeIP: ip, StaticPodPath: repo.Path("examples", "static-pods")})
		if clusterErr == nil {
			clusterStarted = true
			clusterErr = cluster.WaitForNodesReady(context.Background())
		}
	})
	require.NoError(t, clusterErr)
	return cluster
}

// apply is `kubectl apply -f dir` for the numbered files of examples/rbac.
func apply(t *testing.T, c *minicluster.Cluster, dir string) {
	files, err := filepath.Glob(filepath.Join(dir, "0*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	require.NoError(t, c.Apply(context.Background(), files...))
}

// applyRBAC applies examples/rbac and waits until the apiserver's authorizer lets its
// ServiceAccount get nodes/pods: a fresh binding takes a moment to reach it, and a kubelet asked
// meanwhile would remember its denial for 30 s.
func applyRBAC(t *testing.T, c *minicluster.Cluster) {
	apply(t, c, repo.Path("examples", "rbac"))
	authorized(t, c, "kubelet-reader", "pods", true)
}

// authorized waits until the apiserver's authorizer answers want to the ServiceAccount
// kubelet-reader/name asking to get nodes/subresource (a SubjectAccessReview, what the kubelet
// and kubectl auth can-i ask).
func authorized(t *testing.T, c *minicluster.Cluster, name, subresource string, want bool) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:kubelet-reader:" + name,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:kubelet-reader", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: subresource},
	}}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		require.NoError(ct, err)
		assert.Equal(ct, want, got.Status.Allowed, "get nodes/%s for %s (last answer %+v)", subresource, review.Spec.User, got.Status)
	}, 30*time.Second, 100*time.Millisecond)
}

// tokenFile is a ServiceAccount's token in a file, as the kubelet projects it into a pod.
func tokenFile(t *testing.T, c *minicluster.Cluster, namespace, name string) string {
	return satoken.File(t, c.Client, namespace, name)
}

func adminConfig(t *testing.T, c *minicluster.Cluster) *rest.Config {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	require.NoError(t, err)
	return cfg
}

// Discovery, a ServiceAccount token, examples/rbac, the proxy and failover, on a real cluster.
func TestOnTheMiniCluster(t *testing.T) {
	c := miniCluster(t)
	ctx := context.Background()
	admin := adminConfig(t, c)

	t.Run("discovery: InternalIP and the daemonEndpoints port", func(t *testing.T) {
		client, err := kubeletclient.New(admin, kubeletclient.Options{ServiceAccountDir: t.TempDir()})
		require.NoError(t, err)
		for _, n := range c.Nodes {
			e, err := client.Endpoint(ctx, n.Name)
			require.NoError(t, err)
			assert.Equal(t, "https://"+netns.PrivateNodeIP+":"+strconv.Itoa(n.Port), e.URL())
			assert.Equal(t, "daemonEndpoints", e.PortFrom)
		}
	})

	applyRBAC(t, c)
	token := tokenFile(t, c, "kubelet-reader", "kubelet-reader")
	_, err := c.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-rbac"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Client.CoreV1().ServiceAccounts("default").Delete(ctx, "no-rbac", metav1.DeleteOptions{})
	})
	noRBAC := tokenFile(t, c, "default", "no-rbac")

	t.Run("the ServiceAccount of examples/rbac reads every kubelet directly", func(t *testing.T) {
		client, err := kubeletclient.New(admin, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: token, Via: kubeletclient.ViaKubelet})
		require.NoError(t, err)
		results, err := agent.AllNodes(ctx, client, kubeletclient.ReadEndpoints["pods"], 2, 0)
		require.NoError(t, err)
		require.Len(t, results, 2)
		for _, r := range results {
			require.NoError(t, r.Err, r.Node)
			assert.Equal(t, "kubelet", r.Via)
			assert.Equal(t, "HTTP/1.1", r.Protocol, "kubelets with a client CA do not offer HTTP/2")
			assert.Len(t, r.Pods, 5)
		}
	})

	t.Run("a ServiceAccount without RBAC: 403, both permissions named", func(t *testing.T) {
		client, err := kubeletclient.New(admin, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: noRBAC, Via: kubeletclient.ViaKubelet})
		require.NoError(t, err)
		r := client.Pods(ctx, "node-a")
		var e *agent.Error
		require.ErrorAs(t, agent.Explain(context.Background(), client, r.Err), &e)
		assert.Equal(t, agent.Forbidden, e.Kind)
		assert.Contains(t, e.Hint, "system:serviceaccount:default:no-rbac may not get nodes/pods nor nodes/proxy")
	})

	t.Run("through the apiserver's node proxy", func(t *testing.T) {
		client, err := kubeletclient.New(admin, kubeletclient.Options{Via: kubeletclient.ViaAPIServer})
		require.NoError(t, err)
		r := client.Pods(ctx, "node-b")
		require.NoError(t, r.Err)
		assert.Equal(t, "apiserver", r.Via)
		assert.Len(t, r.Pods, 5)
	})

	t.Run("auto: an unreachable kubelet falls back to the proxy, and says so", func(t *testing.T) {
		client, err := kubeletclient.New(admin, kubeletclient.Options{KubeletPort: 1, Via: kubeletclient.ViaAuto, Auth: kubeletclient.AuthKubeconfig})
		require.NoError(t, err)
		r := client.Pods(ctx, "node-a")
		require.NoError(t, r.Err)
		assert.Equal(t, "apiserver", r.Via)
		require.Error(t, r.FellBack)
		assert.Contains(t, r.FellBack.Error(), "connection refused")
	})

	t.Run("auto: a 403 is not hidden behind the proxy", func(t *testing.T) {
		client, err := kubeletclient.New(admin, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: noRBAC, Via: kubeletclient.ViaAuto})
		require.NoError(t, err)
		r := client.Pods(ctx, "node-a")
		var e *agent.Error
		require.ErrorAs(t, agent.Explain(context.Background(), client, r.Err), &e)
		assert.Equal(t, agent.Forbidden, e.Kind, "the kubelet's own 403")
		assert.Equal(t, agent.PartyClient, e.Party)
		assert.Equal(t, "kubelet", r.Via)
		assert.Nil(t, r.FellBack)
	})

	t.Run("all nodes: one failing node does not fail the others", func(t *testing.T) {
		ghost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ghost"}}
		_, err := c.Client.CoreV1().Nodes().Create(ctx, ghost, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Client.CoreV1().Nodes().Delete(ctx, "ghost", metav1.DeleteOptions{}) })
		ghost.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: netns.PrivateNodeIP}}
		ghost.Status.DaemonEndpoints.KubeletEndpoint.Port = 1 // nothing listens
		_, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, ghost, metav1.UpdateOptions{})
		require.NoError(t, err)

		client, err := kubeletclient.New(admin, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: token, Via: kubeletclient.ViaKubelet})
		require.NoError(t, err)
		results, err := agent.AllNodes(ctx, client, kubeletclient.ReadEndpoints["pods"], 2, 0)
		require.NoError(t, err)
		require.Len(t, results, 3)
		assert.Equal(t, "ghost", results[0].Node)
		assert.ErrorContains(t, results[0].Err, "connection refused")
		assert.NoError(t, results[1].Err)
		assert.NoError(t, results[2].Err)
	})
}
