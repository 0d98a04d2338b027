package realkubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/pki"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/reviewserver"
)

var staticPods = repo.Path("examples", "static-pods")

// start runs a kubelet for the test and stops it at cleanup.
func start(t *testing.T, opts Options) *Kubelet {
	t.Helper()
	k, err := Start(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(k.Stop)
	return k
}

// waitForPods polls /pods with client at url until it lists want pods, all Running.
func waitForPods(t *testing.T, client *http.Client, url string, want int) []v1.Pod {
	t.Helper()
	var list v1.PodList
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		body, err := get(context.Background(), client, url+"/pods")
		require.NoError(c, err)
		list = v1.PodList{}
		require.NoError(c, json.Unmarshal(body, &list))
		require.Len(c, list.Items, want)
		for _, p := range list.Items {
			assert.Equal(c, v1.PodRunning, p.Status.Phase, p.Name)
		}
	}, 30*time.Second, 50*time.Millisecond)
	return list.Items
}

func names(pods []v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	sort.Strings(out)
	return out
}

func manifestCount(t *testing.T) int {
	entries, err := os.ReadDir(staticPods)
	require.NoError(t, err)
	return len(entries)
}

// Two real kubelets in one process: separate ports, separate root dirs, each serving the
// static pods under its own node name.
func TestTwoKubeletsInOneProcess(t *testing.T) {
	a := start(t, Options{NodeName: "node-a", StaticPodPath: staticPods, FileCheckFrequency: time.Second})
	b := start(t, Options{NodeName: "node-b", StaticPodPath: staticPods, FileCheckFrequency: time.Second})

	require.NotEqual(t, a.ReadOnlyURL, b.ReadOnlyURL)
	assert.Empty(t, a.SecureURL, "without Webhook there is no secure port")
	assert.False(t, a.Config.EnableServer, "without Webhook there is no secure port")
	require.NotEqual(t, a.RootDir, b.RootDir)

	n := manifestCount(t)
	podsA := waitForPods(t, http.DefaultClient, a.ReadOnlyURL, n)
	podsB := waitForPods(t, http.DefaultClient, b.ReadOnlyURL, n)
	assert.Contains(t, names(podsA), "kube-system/etcd-node-a")
	assert.Contains(t, names(podsB), "kube-system/etcd-node-b")
	for _, p := range podsA {
		assert.Equal(t, "node-a", p.Spec.NodeName)
		assert.Equal(t, "file", p.Annotations["kubernetes.io/config.source"])
	}

	// The read-only server answers /healthz and, like the real one, refuses debug handlers.
	body, err := a.Get(context.Background(), "/healthz")
	require.NoError(t, err)
	assert.Equal(t, "ok", string(body))
	_, err = a.Get(context.Background(), "/runningpods/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "405 Method Not Allowed: Debug endpoints are disabled.")
}

// Every kubelet this package's tests start and stop is removed again after the tests: its
// goroutines outlive Stop (see RemoveRootDirs). So are the TMPDIRs tests gave kubelets: a stopped
// kubelet making its root directory again makes them again too.
func TestMain(m *testing.M) {
	code := m.Run()
	RemoveRootDirs()
	for _, dir := range tmpdirs {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// tmpdirs are the TMPDIRs tests made for kubelets, removed by TestMain.
var tmpdirs []string

// The root directory is made in TMPDIR, unless TMPDIR is too long for the kubelet's sockets.
// Stop removes it, and RemoveRootDirs removes what a stopped kubelet's pod workers made there
// again.
func TestStopRemovesRootDir(t *testing.T) {
	long := filepath.Join(os.TempDir(), strings.Repeat("d", 80))
	tests := []struct {
		name      string
		ownTmpdir bool   // a TMPDIR made for the kubelet, which must stay empty
		tmpdir    string // else TMPDIR for the kubelet; empty: the test's own
		manifests string
		wantIn    string // the root directory's parent; empty: TMPDIR
	}{
		{name: "no pods, TMPDIR of its own", ownTmpdir: true},
		{name: "pods running", manifests: staticPods},
		{name: "TMPDIR too long for sockets", tmpdir: long, wantIn: "/tmp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			manifests := tt.manifests
			if manifests == "" {
				manifests = t.TempDir()
			}
			if tt.ownTmpdir {
				// Made by hand, not t.TempDir: under the test's long name the sockets would not fit.
				dir, err := os.MkdirTemp("", "rk")
				require.NoError(t, err)
				tmpdirs = append(tmpdirs, dir)
				t.Setenv("TMPDIR", dir)
			} else if tt.tmpdir != "" {
				t.Setenv("TMPDIR", tt.tmpdir)
			}
			want := tt.wantIn
			if want == "" {
				want = os.TempDir()
			}
			k := start(t, Options{StaticPodPath: manifests})
			require.DirExists(t, k.RootDir)
			assert.Equal(t, want, filepath.Dir(k.RootDir))
			if tt.manifests != "" {
				waitForPods(t, http.DefaultClient, k.ReadOnlyURL, manifestCount(t))
			}
			k.Stop()
			k.Stop() // idempotent
			assert.NoDirExists(t, k.RootDir)
			if tt.ownTmpdir {
				left, err := os.ReadDir(os.TempDir())
				require.NoError(t, err)
				assert.Empty(t, left, "what the kubelet left in TMPDIR")
			}

			// What a stopped kubelet's pod worker does on its next sync; RemoveRootDirs undoes it.
			require.NoError(t, os.MkdirAll(filepath.Join(k.RootDir, "pods", "0123", "volumes"), 0o750))
			RemoveRootDirs()
			assert.NoDirExists(t, k.RootDir)
		})
	}
}

func TestStartErrors(t *testing.T) {
	_, err := Start(context.Background(), Options{ClientCAFile: filepath.Join(t.TempDir(), "missing.crt")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.crt")
}

// The secure port with app.InitializeTLS and app.BuildAuth: the serving certificate decides
// what a verifying client says; the client CA decides who is authenticated (401 for anyone
// else), the SubjectAccessReview what they may do (403).
func TestSecurePort(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewCA("walkthrough-ca")
	require.NoError(t, err)
	caFile, err := ca.WriteCA(dir, "ca")
	require.NoError(t, err)
	serving, err := ca.Issue(pki.Request{CommonName: "walkthrough", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	require.NoError(t, err)
	certFile, keyFile, err := serving.Write(dir, "serving")
	require.NoError(t, err)
	admin, err := ca.Issue(pki.Request{CommonName: "walkthrough-admin", Organizations: []string{"system:masters"}, Client: true})
	require.NoError(t, err)
	adminCert, err := admin.TLSCertificate()
	require.NoError(t, err)
	nobody, err := ca.Issue(pki.Request{CommonName: "nobody", Client: true})
	require.NoError(t, err)
	nobodyCert, err := nobody.TLSCertificate()
	require.NoError(t, err)
	reviews := reviewserver.Start(nil, map[string][]string{"walkthrough-admin": {"get nodes/pods"}})
	t.Cleanup(reviews.Close)
	reviewClient, err := reviews.Client()
	require.NoError(t, err)

	withCA := start(t, Options{
		NodeName: "secure", StaticPodPath: staticPods, ReadOnlyPort: -1,
		TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: caFile, Webhook: true, AuthClient: reviewClient,
	})
	selfSigned := start(t, Options{NodeName: "selfsigned", StaticPodPath: staticPods, ReadOnlyPort: -1, Webhook: true, AuthClient: reviewClient})
	assert.Empty(t, withCA.ReadOnlyURL, "a negative ReadOnlyPort disables the read-only server")

	selfSignedPool := x509.NewCertPool()
	pem, err := os.ReadFile(selfSigned.ServingCertFile)
	require.NoError(t, err)
	require.True(t, selfSignedPool.AppendCertsFromPEM(pem))

	client := func(roots *x509.CertPool, certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs},
		}}
	}
	tests := []struct {
		name    string
		url     string
		client  *http.Client
		wantErr string // substring of the error; empty means 200
	}{
		{"client certificate from the client CA", withCA.SecureURL, client(ca.Pool(), adminCert), ""},
		{"anonymous is refused", withCA.SecureURL, client(ca.Pool()), "401 Unauthorized"},
		{"authenticated, not authorized", withCA.SecureURL, client(ca.Pool(), nobodyCert), "403 Forbidden"},
		{"serving cert from an unknown CA", withCA.SecureURL, client(x509.NewCertPool(), adminCert), "certificate signed by unknown authority"},
		{"self-signed cert has no IP SAN", selfSigned.SecureURL, client(selfSignedPool), "doesn't contain any IP SANs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := get(context.Background(), tt.client, tt.url+"/pods")
			if tt.wantErr == "" {
				require.NoError(t, err)
				waitForPods(t, tt.client, tt.url, manifestCount(t))
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
