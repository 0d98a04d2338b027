package client

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// podsAPISocket is where a kubelet rooted at root serves its Pods API.
func podsAPISocket(root string) string { return filepath.Join(root, "pods-api", "pods-api.sock") }

// names are the pods' namespace/name, sorted.
func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

// staticPodDir is a static pod directory of its own holding examples/static-pods/web.yaml.
func staticPodDir(t *testing.T) string {
	dir := t.TempDir()
	web, err := os.ReadFile(repo.Path("examples", "static-pods", "web.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), web, 0o644))
	return dir
}

// The real kubelet's Pods API: the socket where its root directory says, trusted (the kubelet
// made it, this user's), the pods its /pods lists, a watch that sees a static pod come and go —
// and, with the PodsAPI gate off, no socket, and an error that says so.
func TestPodsAPIOfARealKubelet(t *testing.T) {
	ctx := context.Background()
	manifests := staticPodDir(t)
	k, err := realkubelet.Start(ctx, realkubelet.Options{NodeName: "pods-api-node", StaticPodPath: manifests, FileCheckFrequency: time.Second})
	require.NoError(t, err)
	t.Cleanup(k.Stop)
	socket := podsAPISocket(k.RootDir)
	c, err := kubeletclient.New(nil, kubeletclient.Options{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: socket})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	require.NoError(t, kubeletclient.CheckPodsAPISocket(socket), "the kubelet's own socket, in its own directory")
	dir, err := os.Stat(filepath.Dir(socket))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), dir.Mode().Perm(), "the kubelet makes the socket's directory 0750 (cri-client's CreateListener)")

	var r kubeletclient.Result
	require.EventuallyWithT(t, func(ct *assert.CollectT) { // FailedPrecondition until the kubelet's sources are ready
		r = c.Get(ctx, "pods-api-node", kubeletclient.ReadEndpoints["pods"])
		require.NoError(ct, r.Err)
		assert.Equal(ct, []string{"default/web-pods-api-node"}, names(r.Pods))
	}, time.Minute, 100*time.Millisecond)
	assert.Equal(t, "podsapi", r.Via)
	body, err := k.Get(ctx, "/pods")
	require.NoError(t, err)
	assert.Contains(t, string(body), `"name":"web-pods-api-node"`, "the same pod in the kubelet's /pods")

	t.Run("WatchPods sees a static pod come and go", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var mu sync.Mutex
		var seen []string
		done := make(chan error, 1)
		go func() {
			done <- c.WatchPods(ctx, "pods-api-node", func(e kubeletclient.PodEvent) {
				mu.Lock()
				defer mu.Unlock()
				s := string(e.Type)
				if e.Pod != nil {
					s += " " + e.Pod.Namespace + "/" + e.Pod.Name
				}
				seen = append(seen, s)
			})
		}()
		has := func(want string) func() bool {
			return func() bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(seen, want) }
		}
		require.Eventually(t, has("INITIAL_SYNC_COMPLETE"), time.Minute, 10*time.Millisecond)
		mu.Lock()
		// Every pod, then the sync; a status the kubelet sets meanwhile may already follow it.
		assert.Equal(t, []string{"ADDED default/web-pods-api-node", "INITIAL_SYNC_COMPLETE"}, seen[:min(2, len(seen))], "every pod, then the sync")
		for _, e := range seen[min(2, len(seen)):] {
			assert.Equal(t, "MODIFIED default/web-pods-api-node", e, "after the sync, only the pod's status changes: %q", seen)
		}
		mu.Unlock()

		manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: extra\nspec:\n  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10.2\n"
		require.NoError(t, os.WriteFile(filepath.Join(manifests, "extra.yaml"), []byte(manifest), 0o644))
		require.Eventually(t, has("ADDED default/extra-pods-api-node"), time.Minute, 10*time.Millisecond)
		require.NoError(t, os.Remove(filepath.Join(manifests, "extra.yaml")))
		require.Eventually(t, has("DELETED default/extra-pods-api-node"), time.Minute, 10*time.Millisecond, "%q", seen)
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
		mu.Lock()
		defer mu.Unlock()
		assert.NotContains(t, seen, "BROKEN", "one stream throughout")
	})

	t.Run("the PodsAPI gate off: no socket, and the error says so", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.PodsAPI, false)
		off, err := realkubelet.Start(ctx, realkubelet.Options{NodeName: "gate-off", StaticPodPath: manifests})
		require.NoError(t, err)
		t.Cleanup(off.Stop)
		// The kubelet starts its two gRPC servers one after the other (startKubelet): once the
		// podresources socket is there, a Pods API socket would have been too, give or take a moment.
		require.Eventually(t, func() bool {
			_, err := os.Stat(filepath.Join(off.RootDir, "pod-resources", "kubelet.sock"))
			return err == nil
		}, time.Minute, 10*time.Millisecond)
		time.Sleep(time.Second)
		c, err := kubeletclient.New(nil, kubeletclient.Options{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: podsAPISocket(off.RootDir)})
		require.NoError(t, err)
		defer c.Close()
		r := c.Get(ctx, "gate-off", kubeletclient.ReadEndpoints["pods"])
		require.Error(t, r.Err)
		assert.Contains(t, r.Err.Error(), "no directory "+filepath.Join(off.RootDir, "pods-api"))
		assert.Contains(t, r.Err.Error(), "is its PodsAPI feature gate off")
	})
}

// The three ways to one node's pods, on a mini-cluster's kubelet: its socket, HTTPS with the
// ServiceAccount of examples/rbac, the apiserver's node proxy — the same pods each way.
func TestThreeWaysOnTheMiniCluster(t *testing.T) {
	c := miniCluster(t)
	ctx := context.Background()
	admin := adminConfig(t, c)
	applyRBAC(t, c)
	token := tokenFile(t, c, "kubelet-reader", "kubelet-reader")
	node := c.Nodes[0]
	want := []string{"default/web-" + node.Name, "kube-system/etcd-" + node.Name, "kube-system/kube-apiserver-" + node.Name,
		"kube-system/kube-controller-manager-" + node.Name, "kube-system/kube-scheduler-" + node.Name}
	socket, err := kubeletclient.New(nil, kubeletclient.Options{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: podsAPISocket(node.Kubelet.RootDir)})
	require.NoError(t, err)
	defer socket.Close()
	require.EventuallyWithT(t, func(ct *assert.CollectT) { // FailedPrecondition until the kubelet's sources are ready
		r := socket.Get(ctx, node.Name, kubeletclient.ReadEndpoints["pods"])
		require.NoError(ct, r.Err)
		assert.Equal(ct, want, names(r.Pods))
	}, time.Minute, 100*time.Millisecond)

	podsVia := map[string][]string{}
	for _, opts := range []kubeletclient.Options{
		{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: podsAPISocket(node.Kubelet.RootDir)},
		{Via: kubeletclient.ViaKubelet, Auth: kubeletclient.AuthToken, TokenFile: token},
		{Via: kubeletclient.ViaAPIServer},
		// Auto, on the node it runs on: the socket first.
		{Via: kubeletclient.ViaAuto, OwnNode: node.Name, PodsAPISocket: podsAPISocket(node.Kubelet.RootDir), Auth: kubeletclient.AuthToken, TokenFile: token},
	} {
		client, err := kubeletclient.New(admin, opts)
		require.NoError(t, err)
		r := client.Get(ctx, node.Name, kubeletclient.ReadEndpoints["pods"])
		client.Close()
		require.NoError(t, r.Err, opts.Via)
		require.NoError(t, r.PodsAPISkipped, opts.Via)
		podsVia[string(opts.Via)+" → "+r.Via] = names(r.Pods)
	}
	assert.Equal(t, map[string][]string{"podsapi → podsapi": want, "kubelet → kubelet": want, "apiserver → apiserver": want, "auto → podsapi": want}, podsVia)

	t.Run("the socket answers for its own node only", func(t *testing.T) {
		r := socket.Get(ctx, c.Nodes[1].Name, kubeletclient.ReadEndpoints["pods"])
		require.Error(t, r.Err)
		assert.Contains(t, r.Err.Error(), "its kubelet runs node "+node.Name+", not "+c.Nodes[1].Name)
	})
}
