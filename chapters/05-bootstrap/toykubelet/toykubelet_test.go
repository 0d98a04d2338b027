package toykubelet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/record"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/features"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/server"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/pki"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/reviewserver"
)

func testPod(name, uid, image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid),
			Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: image}, {Name: "sidecar", Image: "side:1"}}},
	}
}

// drain returns the events recorded so far.
func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// The sync loop, one operation at a time, through the same channel type startKubelet passes.
func TestSyncLoop(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	recorder := record.NewFakeRecorder(100)
	k := New(Options{NodeName: "node", RootDir: t.TempDir(), Recorder: recorder, Clock: clk})
	updates := make(chan kubetypes.PodUpdate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx, updates); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	web, db := testPod("web", "uid-web", "nginx:1"), testPod("db", "uid-db", "postgres:16")
	deleting := testPod("web", "uid-web", "nginx:2")
	deleting.DeletionTimestamp = &metav1.Time{Time: clk.Now()}
	withStatus := testPod("db", "uid-db", "postgres:16")
	withStatus.Status.Message = "from the source"

	type want struct {
		pods   map[string]v1.PodPhase // name → phase
		images map[string]string      // name → image of "main"
		events []string
	}
	steps := []struct {
		name   string
		update kubetypes.PodUpdate
		want   want
	}{
		{"ADD starts pods", kubetypes.PodUpdate{Op: kubetypes.ADD, Pods: []*v1.Pod{web, db}}, want{
			pods: map[string]v1.PodPhase{"web": v1.PodRunning, "db": v1.PodRunning}, images: map[string]string{"web": "nginx:1", "db": "postgres:16"},
			events: []string{
				`Normal Pulled Container image "nginx:1" already present on machine`, "Normal Created Created container: main", "Normal Started Started container main",
				`Normal Pulled Container image "side:1" already present on machine`, "Normal Created Created container: sidecar", "Normal Started Started container sidecar",
				`Normal Pulled Container image "postgres:16" already present on machine`, "Normal Created Created container: main", "Normal Started Started container main",
				`Normal Pulled Container image "side:1" already present on machine`, "Normal Created Created container: sidecar", "Normal Started Started container sidecar",
			}}},
		{"UPDATE restarts changed containers only", kubetypes.PodUpdate{Op: kubetypes.UPDATE, Pods: []*v1.Pod{testPod("web", "uid-web", "nginx:2")}}, want{
			pods: map[string]v1.PodPhase{"web": v1.PodRunning, "db": v1.PodRunning}, images: map[string]string{"web": "nginx:2", "db": "postgres:16"},
			events: []string{"Normal Started Started container main"}}},
		{"RECONCILE keeps the kubelet's status", kubetypes.PodUpdate{Op: kubetypes.RECONCILE, Pods: []*v1.Pod{withStatus}}, want{
			pods: map[string]v1.PodPhase{"web": v1.PodRunning, "db": v1.PodRunning}, images: map[string]string{"web": "nginx:2", "db": "postgres:16"}}},
		{"DELETE stops, the pod stays listed", kubetypes.PodUpdate{Op: kubetypes.DELETE, Pods: []*v1.Pod{deleting}}, want{
			pods: map[string]v1.PodPhase{"web": v1.PodSucceeded, "db": v1.PodRunning}, images: map[string]string{"web": "nginx:2", "db": "postgres:16"},
			events: []string{"Normal Killing Stopping container main", "Normal Killing Stopping container sidecar"}}},
		{"REMOVE forgets", kubetypes.PodUpdate{Op: kubetypes.REMOVE, Pods: []*v1.Pod{web}}, want{
			pods: map[string]v1.PodPhase{"db": v1.PodRunning}, images: map[string]string{"db": "postgres:16"}}},
	}
	for _, step := range steps {
		updates <- step.update
		require.Eventually(t, func() bool { return len(k.Pods()) == len(step.want.pods) }, 30*time.Second, time.Millisecond, step.name)
		// One more update proves the previous one has been handled completely.
		updates <- kubetypes.PodUpdate{Op: kubetypes.RECONCILE}
		got, images := map[string]v1.PodPhase{}, map[string]string{}
		for _, p := range k.Pods() {
			got[p.Name], images[p.Name] = p.Status.Phase, p.Spec.Containers[0].Image
			if p.Status.Phase == v1.PodRunning {
				require.Len(t, p.Status.ContainerStatuses, 2, step.name)
				for _, cs := range p.Status.ContainerStatuses {
					assert.NotNil(t, cs.State.Running, "%s: %s", step.name, cs.Name)
					assert.True(t, cs.Ready)
				}
			}
		}
		assert.Equal(t, step.want.pods, got, step.name)
		assert.Equal(t, step.want.images, images, step.name)
		assert.Equal(t, step.want.events, drain(recorder), step.name)
	}
	db2, ok := k.pods.byName("default", "db")
	require.True(t, ok)
	assert.Empty(t, db2.Status.Message, "the kubelet's status, not the source's")
	assert.Equal(t, []types.UID{"uid-web"}, k.Removed())
}

func TestBirthCry(t *testing.T) {
	recorder := record.NewFakeRecorder(1)
	New(Options{NodeName: "node", Recorder: recorder}).BirthCry()
	assert.Equal(t, "Normal Starting Starting kubelet.", <-recorder.Events)
}

func TestGarbageCollection(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	k := New(Options{NodeName: "node", Recorder: record.NewFakeRecorder(100), Clock: clk, GCPeriod: 5 * time.Millisecond, GCGracePeriod: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k.handle(ctx, kubetypes.PodUpdate{Op: kubetypes.ADD, Pods: []*v1.Pod{testPod("a", "uid-a", "x")}})
	k.handle(ctx, kubetypes.PodUpdate{Op: kubetypes.REMOVE, Pods: []*v1.Pod{testPod("a", "uid-a", "x")}})
	k.StartGarbageCollection(ctx)

	time.Sleep(50 * time.Millisecond) // several collections, all within the grace period
	assert.Equal(t, []types.UID{"uid-a"}, k.Removed())
	clk.Step(time.Minute + time.Second)
	assert.Eventually(t, func() bool { return len(k.Removed()) == 0 }, 30*time.Second, 5*time.Millisecond)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func waitListen(t *testing.T, addr string) {
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 30*time.Second, 5*time.Millisecond)
}

func TestReadOnlyServer(t *testing.T) {
	k := New(Options{NodeName: "node", Recorder: record.NewFakeRecorder(100)})
	k.handle(context.Background(), kubetypes.PodUpdate{Op: kubetypes.ADD, Pods: []*v1.Pod{testPod("web", "uid-web", "nginx:1")}})
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.ListenAndServeReadOnly(ctx, net.ParseIP("127.0.0.1"), uint(port), nil); close(done) }()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitListen(t, "127.0.0.1:"+strconv.Itoa(port))

	code, body := get(t, http.DefaultClient, base+"/pods")
	require.Equal(t, http.StatusOK, code)
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	assert.Equal(t, "PodList", list.Kind)
	require.Len(t, list.Items, 1)
	assert.Equal(t, v1.PodRunning, list.Items[0].Status.Phase)

	code, body = get(t, http.DefaultClient, base+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
	for _, p := range debugPaths {
		code, body = get(t, http.DefaultClient, base+p+"x")
		assert.Equal(t, http.StatusMethodNotAllowed, code, p)
		assert.Equal(t, "Debug endpoints are disabled.\n", body, p)
	}

	cancel()
	<-done
	_, err := http.Get(base + "/healthz")
	assert.Error(t, err, "the server stops with its context")
}

// The secure server with the real kubelet's app.BuildAuth: client certificates from a client CA,
// anonymous requests refused, and webhook authorization answered by a review server.
func TestSecureServerWithRealAuth(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewCA("toy-ca")
	require.NoError(t, err)
	caFile, err := ca.WriteCA(dir, "ca")
	require.NoError(t, err)
	serving, err := ca.Issue(pki.Request{CommonName: "node", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	require.NoError(t, err)
	certFile, keyFile, err := serving.Write(dir, "serving")
	require.NoError(t, err)
	clientCert := func(user string) tls.Certificate {
		pair, err := ca.Issue(pki.Request{CommonName: user, Client: true})
		require.NoError(t, err)
		cert, err := pair.TLSCertificate()
		require.NoError(t, err)
		return cert
	}

	reviews := reviewserver.Start(
		map[string]authenticationv1.UserInfo{"reader-token": {Username: "reader"}},
		map[string][]string{"admin": {"get nodes/pods"}, "proxy-user": {"get nodes/proxy"}})
	defer reviews.Close()
	reviewClient, err := reviews.Client()
	require.NoError(t, err)

	config, err := options.NewKubeletConfiguration()
	require.NoError(t, err)
	config.Address, config.Port = "127.0.0.1", int32(freePort(t))
	config.Authentication.Anonymous.Enabled = false
	config.Authentication.X509.ClientCAFile = caFile
	config.Authentication.Webhook.Enabled = true
	config.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeWebhook
	auth, runCAReload, err := app.BuildAuth("node", reviewClient, *config)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runCAReload(ctx.Done())
	tlsConfig, err := TLSConfig(&server.TLSOptions{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile})
	require.NoError(t, err)

	k := New(Options{NodeName: "node", Recorder: record.NewFakeRecorder(100), Config: *config})
	go k.ListenAndServe(ctx, config, tlsConfig, auth, nil)
	addr := net.JoinHostPort(config.Address, strconv.Itoa(int(config.Port)))
	waitListen(t, addr)

	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: certs}}}
	}
	withToken := func(token string) *http.Client {
		c := client()
		c.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+token)
			return client().Transport.RoundTrip(r)
		})
		return c
	}
	tests := []struct {
		name     string
		client   *http.Client
		wantCode int
		wantBody string
	}{
		{"anonymous", client(), http.StatusUnauthorized, "Unauthorized\n"},
		{"bad token", withToken("nope"), http.StatusUnauthorized, "Unauthorized\n"},
		{"token, no permission", withToken("reader-token"), http.StatusForbidden, "Forbidden (user=reader, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"},
		{"client cert, nodes/pods", client(clientCert("admin")), http.StatusOK, `"kind":"PodList"`},
		{"client cert, nodes/proxy is enough too", client(clientCert("proxy-user")), http.StatusOK, `"kind":"PodList"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, tt.client, "https://"+addr+"/pods")
			assert.Equal(t, tt.wantCode, code)
			assert.Contains(t, body, tt.wantBody)
		})
	}
	assert.Contains(t, reviews.Asked(), "get nodes/pods")
	assert.Contains(t, reviews.Asked(), "get nodes/proxy")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestPodResourcesAndPodsAPI(t *testing.T) {
	root, err := os.MkdirTemp("", "toy") // short: unix socket paths are limited to 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	k := New(Options{NodeName: "node", RootDir: root, Recorder: record.NewFakeRecorder(100)})
	k.handle(context.Background(), kubetypes.PodUpdate{Op: kubetypes.ADD, Pods: []*v1.Pod{testPod("web", "uid-web", "nginx:1")}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	dial := func(socket string) *grpc.ClientConn {
		require.Eventually(t, func() bool { _, err := os.Stat(socket); return err == nil }, 30*time.Second, 5*time.Millisecond)
		conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}

	go k.ListenAndServePodResources(ctx)
	pr := podresourcesv1.NewPodResourcesListerClient(dial(k.PodResourcesSocket()))
	list, err := pr.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	require.NoError(t, err)
	require.Len(t, list.PodResources, 1)
	assert.Equal(t, "web", list.PodResources[0].Name)
	assert.Len(t, list.PodResources[0].Containers, 2)
	_, err = pr.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: "default", PodName: "nope"})
	assert.ErrorContains(t, err, "not found")

	// PodsAPI is beta and on by default in v1.37; turned off, nothing listens.
	require.True(t, utilfeature.DefaultFeatureGate.Enabled(features.PodsAPI), "the v1.37 default")
	t.Run("gate off", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.PodsAPI, false)
		k.ListenAndServePods(ctx) // returns at once
		assert.NoFileExists(t, k.PodsSocket())
	})
	go k.ListenAndServePods(ctx)
	pods := podsv1alpha1.NewPodsClient(dial(k.PodsSocket()))
	listed, err := pods.ListPods(ctx, &podsv1alpha1.ListPodsRequest{})
	require.NoError(t, err)
	require.Len(t, listed.Pods, 1)
	var pod v1.Pod
	require.NoError(t, pod.Unmarshal(listed.Pods[0]))
	assert.Equal(t, "web", pod.Name)

	watch, err := pods.WatchPods(ctx, &podsv1alpha1.WatchPodsRequest{})
	require.NoError(t, err)
	var kinds []podsv1alpha1.EventType
	for range 2 {
		e, err := watch.Recv()
		require.NoError(t, err)
		kinds = append(kinds, e.Type)
	}
	k.handle(ctx, kubetypes.PodUpdate{Op: kubetypes.REMOVE, Pods: []*v1.Pod{testPod("web", "uid-web", "nginx:1")}})
	for {
		e, err := watch.Recv()
		require.NoError(t, err)
		kinds = append(kinds, e.Type)
		if e.Type == podsv1alpha1.EventType_DELETED {
			break
		}
	}
	assert.Equal(t, podsv1alpha1.EventType_ADDED, kinds[0])
	assert.Equal(t, podsv1alpha1.EventType_INITIAL_SYNC_COMPLETE, kinds[1])
}

// noLeaks is goleak.VerifyNone with the patience a loaded machine needs: goleak retries for less
// than half a second, while a goroutine already told to stop may wait longer for a core. A
// goroutine that never stops still fails the test, after half a minute.
func noLeaks(t *testing.T, opts ...goleak.Option) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if goleak.Find(opts...) == nil { // Find retries for a moment before it answers
			break
		}
	}
	goleak.VerifyNone(t, opts...)
}

// Everything the kubelet starts stops with its context: no goroutine is left behind.
func TestStopsEverything(t *testing.T) {
	defer noLeaks(t,
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*Broadcaster).loop"),
		goleak.IgnoreCurrent(),
	)
	root, err := os.MkdirTemp("", "toy")
	require.NoError(t, err)
	defer func() { _ = os.RemoveAll(root) }()
	k := New(Options{NodeName: "node", RootDir: root, Recorder: record.NewFakeRecorder(1000), GCPeriod: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	updates := make(chan kubetypes.PodUpdate)
	cfg := &kubeletconfig.KubeletConfiguration{Address: "127.0.0.1", Port: int32(freePort(t))}
	readOnly := freePort(t)
	stopped := make(chan struct{}, 5)
	for _, run := range []func(){
		func() { k.Run(ctx, updates) },
		func() { k.ListenAndServe(ctx, cfg, nil, nil, nil) },
		func() { k.ListenAndServeReadOnly(ctx, net.ParseIP("127.0.0.1"), uint(readOnly), nil) },
		func() { k.ListenAndServePodResources(ctx) },
		func() { k.ListenAndServePods(ctx) },
	} {
		go func() { run(); stopped <- struct{}{} }()
	}
	k.StartGarbageCollection(ctx)
	waitListen(t, "127.0.0.1:"+strconv.Itoa(readOnly))
	updates <- kubetypes.PodUpdate{Op: kubetypes.ADD, Pods: []*v1.Pod{testPod("web", "uid-web", "nginx:1")}}
	get(t, http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(readOnly)+"/pods")
	cancel()
	for range 5 {
		<-stopped
	}
}
