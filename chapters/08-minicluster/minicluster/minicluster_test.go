package minicluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/satoken"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// The tests need node addresses that are not loopback and lead nowhere: TestMain runs the test
// binary again inside a private network namespace, or the tests skip and say why.
var (
	noNetns   error    // why no private network namespace could be made
	shared    *Cluster // one cluster for the package: starting one takes seconds
	staticDir string   // its static pod directory, which tests edit
)

var nodeNames = []string{"node-a", "node-b"}

func TestMain(m *testing.M) {
	if ran, code, err := netns.RunInside(); ran {
		os.Exit(code)
	} else if err != nil {
		noNetns = fmt.Errorf("no private network namespace could be made (%w); these tests never use this machine's own address", err)
		code := m.Run()
		realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
		os.Exit(code)
	}
	ip, _ := netns.Inside()
	os.Exit(runWithCluster(m, ip))
}

// runWithCluster runs the tests with the components' logs in a file (printed when a test fails),
// stops the shared cluster if a test started it and removes what stopped kubelets made again
// (realkubelet.RemoveRootDirs).
func runWithCluster(m *testing.M, ip string) int {
	logFile, closeLog, err := kubeletlog.ToFile("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer closeLog()
	nodeIP = ip
	code := m.Run()
	if shared != nil {
		stop := time.Now()
		shared.Stop()
		fmt.Fprintf(os.Stderr, "mini-cluster stopped in %s\n", time.Since(stop).Round(time.Millisecond))
		_ = os.RemoveAll(staticDir)
	}
	realkubelet.RemoveRootDirs()
	if code != 0 {
		printLog(logFile)
	}
	return code
}

var (
	nodeIP     string
	sharedOnce sync.Once
	sharedErr  error
)

// startShared starts the cluster the tests share, on first use: two nodes, two static pods.
func startShared() error {
	var err error
	if staticDir, err = os.MkdirTemp("", "minicluster-static-"); err != nil {
		return err
	}
	for _, name := range []string{"etcd.yaml", "web.yaml"} {
		data, err := os.ReadFile(repo.Path("examples", "static-pods", name))
		if err == nil {
			err = os.WriteFile(filepath.Join(staticDir, name), data, 0o644)
		}
		if err != nil {
			return err
		}
	}
	ctx := context.Background()
	start := time.Now()
	shared, err = Start(ctx, Options{NodeNames: nodeNames, NodeIP: nodeIP, StaticPodPath: staticDir, FileCheckFrequency: time.Second})
	if err != nil {
		return err
	}
	if err := shared.WaitForNodesReady(ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mini-cluster with %d nodes ready in %s\n", len(nodeNames), time.Since(start).Round(time.Millisecond))
	return nil
}

func printLog(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	const tail = 200_000
	if len(data) > tail {
		data = data[len(data)-tail:]
	}
	fmt.Fprintf(os.Stderr, "--- last lines of the components' log ---\n%s\n", data)
}

func cluster(t *testing.T) *Cluster {
	t.Helper()
	tier.Require(t, "private network", noNetns)
	sharedOnce.Do(func() { sharedErr = startShared() })
	require.NoError(t, sharedErr, "the shared mini-cluster did not start")
	return shared
}

// The Node objects carry what each kubelet was given: its address and its port.
func TestNodesRegistered(t *testing.T) {
	c := cluster(t)
	for _, n := range c.Nodes {
		node, err := c.Client.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: netns.PrivateNodeIP})
		assert.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.Name})
		assert.Equal(t, int32(n.Port), node.Status.DaemonEndpoints.KubeletEndpoint.Port)
		assert.True(t, ready(node), "%s is Ready", n.Name)
		require.EventuallyWithT(t, func(c2 *assert.CollectT) {
			lease, err := c.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), n.Name, metav1.GetOptions{})
			require.NoError(c2, err, "the kubelet heartbeats through its node lease")
			assert.Equal(c2, n.Name, *lease.Spec.HolderIdentity)
		}, time.Minute, 100*time.Millisecond)
	}
}

// Each static pod of each node has its mirror pod in the apiserver.
func TestMirrorPods(t *testing.T) {
	c := cluster(t)
	mirrors, err := c.waitForMirrorPods(context.Background(), 2*len(c.Nodes), "")
	require.NoError(t, err)
	var names []string
	for _, p := range mirrors {
		names = append(names, p.Namespace+"/"+p.Name)
		assert.Equal(t, "file", p.Annotations["kubernetes.io/config.source"])
		require.Len(t, p.OwnerReferences, 1, "a mirror pod is owned by its Node")
		assert.Equal(t, "Node", p.OwnerReferences[0].Kind)
	}
	for _, n := range c.Nodes {
		assert.Contains(t, names, "default/web-"+n.Name)
		assert.Contains(t, names, "kube-system/etcd-"+n.Name)
	}
}

// Deleting a mirror pod through the apiserver does not delete the static pod: the kubelet
// makes a new mirror.
func TestDeletedMirrorPodComesBack(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	name := "web-" + c.Nodes[0].Name
	_, err := c.waitForMirrorPods(ctx, 2*len(c.Nodes), "")
	require.NoError(t, err)
	before, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, c.Client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		after, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && after.UID != before.UID, nil
	}), "the kubelet recreates the mirror pod")
}

// The apiserver's node proxy reaches the kubelet's /pods, with its kubelet client certificate.
func TestNodeProxyPods(t *testing.T) {
	c := cluster(t)
	for _, n := range c.Nodes {
		data, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "pods").DoRaw(context.Background())
		require.NoError(t, err, n.Name)
		var list corev1.PodList
		require.NoError(t, json.Unmarshal(data, &list))
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		assert.Contains(t, names, "web-"+n.Name)
	}
}

// A ServiceAccount token sent straight to a kubelet: 401 when it is garbage, 403 without RBAC,
// 200 once a ClusterRole grants nodes/pods (checked before nodes/proxy).
func TestServiceAccountTokenAgainstKubelet(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	node := c.Nodes[0]
	token := serviceAccountToken(t, c, "pods-reader")
	url := "https://" + node.IP + ":" + strconv.Itoa(node.Port) + "/pods"
	get := func(token string) (int, string) {
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.CA.Pool()}}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	code, body := get("garbage")
	assert.Equal(t, http.StatusUnauthorized, code, body)
	code, body = get(token)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "Forbidden (user=system:serviceaccount:default:pods-reader, verb=get, resource=nodes, subresource(s)=[pods proxy])")

	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "read-node-pods"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/pods"}, Verbs: []string{"get"}}}}
	_, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-node-pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "pods-reader"}}}
	_, err = c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	// The kubelet caches a denial for authorization.webhook.cacheUnauthorizedTTL.
	require.Eventually(t, func() bool { code, _ := get(token); return code == http.StatusOK }, time.Minute, 200*time.Millisecond)
	_, body = get(token)
	assert.Contains(t, body, `"kind":"PodList"`)
}

// The kubeconfig written for kubectl works with client-go.
func TestKubeconfig(t *testing.T) {
	c := cluster(t)
	config, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	require.NoError(t, err)
	client, err := clientset.NewForConfig(config)
	require.NoError(t, err)
	nodes, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, nodes.Items, len(c.Nodes))
	raw, err := clientcmd.LoadFromFile(c.Kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "walkthrough", raw.CurrentContext)
}

// Removing a manifest removes the static pod and its mirror. The test adds a manifest of its
// own and removes that one: the others' pods stay, whatever order the tests run in.
func TestRemovingManifestRemovesMirror(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(staticDir, "web.yaml"))
	require.NoError(t, err)
	manifest := filepath.Join(staticDir, "goner.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(strings.Replace(string(data), "name: web\n", "name: goner\n", 1)), 0o644))
	mirrors := func(ctx context.Context) (int, error) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, "goner-") {
				n++
			}
		}
		return n, nil
	}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := mirrors(ctx)
		return err == nil && n == len(c.Nodes), nil
	}), "every node mirrors goner-<node>")
	require.NoError(t, os.Remove(manifest))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := mirrors(ctx)
		return err == nil && n == 0, nil
	}), "every goner-<node> mirror pod is gone")
	for _, n := range c.Nodes {
		_, err := c.Client.CoreV1().Pods("default").Get(ctx, "web-"+n.Name, metav1.GetOptions{})
		assert.NoError(t, err, "the other static pods stay")
	}
}

// serviceAccountToken creates a ServiceAccount and asks the TokenRequest API for its token.
func serviceAccountToken(t *testing.T, c *Cluster, name string) string {
	ctx := context.Background()
	_, err := c.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return satoken.Token(t, c.Client, "default", name)
}
