package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/syncbuf"
)

// The secrets of these tests: each must reach only where its test says.
const (
	podToken        = "pod-serviceaccount-token-0123456789"
	fileToken       = "file-token-0123456789abcdef"
	kubeconfigToken = "kubeconfig-user-token-0123456789"
	mintedToken     = "minted-kubelet-reader-token-0123456789"
	basicPassword   = "kubeconfig-basic-password-0123"
)

// env is one test's world: a CA, a fake apiserver with one Node per fake kubelet, and no
// trace of the machine's own kubeconfig, in-cluster environment or /var/run/secrets.
type env struct {
	pki       *fakecluster.PKI
	apiserver *fakecluster.APIServer
	// kubelet is a TLS kubelet whose certificate (for 127.0.0.1) the cluster CA signed.
	kubelet *fakecluster.Kubelet
	// plain is a plain-HTTP listener, as a read-only port (or an attacker's) would be.
	plain *fakecluster.Kubelet
	// serviceAccountDir is empty: outside a pod.
	serviceAccountDir string
}

func newEnv(t *testing.T, pods ...corev1.Pod) *env {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // no in-cluster configuration from this machine
	e := &env{pki: fakecluster.NewPKI(t)}
	e.apiserver = fakecluster.NewAPIServer(t, e.pki)
	e.apiserver.ServiceAccount("kubelet-reader/kubelet-reader", mintedToken)
	e.kubelet = fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: e.pki.ServingConfig(t, "127.0.0.1"), Pods: pods})
	e.plain = fakecluster.NewKubelet(t, fakecluster.KubeletOptions{Pods: pods})
	e.apiserver.SetNodes(fakecluster.Node("n1", e.kubelet.Port))
	e.serviceAccountDir = t.TempDir()
	return e
}

// run runs the command in-process, as `kubelet-pods args...`.
func (e *env) run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return e.runIn(t, e.serviceAccountDir, args...)
}

func (e *env) runIn(t *testing.T, serviceAccountDir string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	o := &clientOptions{now: func() time.Time { return testNow }}
	o.opts.ServiceAccountDir = serviceAccountDir
	cmd := newClientCommand(context.Background(), o)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// authorizations lists the Authorization headers a server received, one per request.
func authorizations(r *fakecluster.Recorder) []string {
	var out []string
	for _, req := range r.Requests() {
		out = append(out, req.Authorization)
	}
	return out
}

func clientCerts(r *fakecluster.Recorder) []string {
	var out []string
	for _, req := range r.Requests() {
		out = append(out, req.ClientCert)
	}
	return out
}

// No token, kubeconfig credential or client certificate goes over plain HTTP: the listener
// receives nothing, and the error says what to do.
func TestNoCredentialsOverPlainHTTP(t *testing.T) {
	e := newEnv(t)
	certFile, keyFile := e.pki.ClientCert(t, "the-user")
	withToken := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	withBasic := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Username: "u", Password: basicPassword})
	withCert := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{CertFile: certFile, KeyFile: keyFile})
	inPod := fakecluster.ServiceAccountDir(t, podToken, "")
	// The pod's in-cluster configuration authenticates with the mounted token itself.
	inCluster := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{TokenFile: filepath.Join(inPod, "token")})
	url := e.plain.URL

	tests := []struct {
		name   string
		saDir  string
		args   []string
		wantIn string // in the error
	}{
		{"auto: the minted ServiceAccount token", "", []string{"--kubeconfig", withToken, "--kubelet-url", url}, "over plain http://"},
		{"auto in a pod: the pod's token", inPod, []string{"--kubeconfig", inCluster, "--kubelet-url", url}, "bearer token from " + inPod},
		{"--auth=token", "", []string{"--kubelet-url", url, "--auth=token", "--token-file", fakecluster.TokenFile(t, fileToken)}, "add --auth=none"},
		{"--token-file with auto", "", []string{"--kubelet-url", url, "--token-file", fakecluster.TokenFile(t, fileToken)}, "add --auth=none"},
		{"--auth=kubeconfig, a bearer token", "", []string{"--kubeconfig", withToken, "--kubelet-url", url, "--auth=kubeconfig"}, "the kubeconfig's own credentials"},
		{"--auth=kubeconfig, basic auth", "", []string{"--kubeconfig", withBasic, "--kubelet-url", url, "--auth=kubeconfig"}, "the kubeconfig's own credentials"},
		{"--auth=kubeconfig, a client certificate", "", []string{"--kubeconfig", withCert, "--kubelet-url", url, "--auth=kubeconfig"}, "the kubeconfig's own credentials"},
		{"--auth=serviceaccount", "", []string{"--kubeconfig", withToken, "--kubelet-url", url, "--auth=serviceaccount"}, "TokenRequest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.plain.Reset()
			e.apiserver.Reset()
			dir := e.serviceAccountDir
			if tt.saDir != "" {
				dir = tt.saDir
			}
			stdout, stderr, err := e.runIn(t, dir, tt.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "refusing to send")
			assert.Contains(t, err.Error(), tt.wantIn)
			assert.Contains(t, err.Error(), "--auth=none")
			assert.Empty(t, e.plain.Requests(), "the plain-HTTP listener must receive nothing")
			for _, req := range e.apiserver.Requests() {
				assert.NotContains(t, req.Path, "/token", "no token is even minted for a request that cannot carry it")
			}
			for _, secret := range []string{podToken, fileToken, kubeconfigToken, mintedToken, basicPassword} {
				assert.NotContains(t, stdout+stderr+err.Error(), secret)
			}
		})
	}

	t.Run("--auth=none: the read-only port, anonymously", func(t *testing.T) {
		e.plain.Reset()
		_, _, err := e.runIn(t, inPod, "--kubelet-url", url, "--auth=none")
		require.NoError(t, err)
		assert.Equal(t, []string{""}, authorizations(e.plain.Recorder))
	})

	t.Run("user info in the URL is refused, and not printed", func(t *testing.T) {
		e.plain.Reset()
		withUser := strings.Replace(url, "http://", "http://admin:"+basicPassword+"@", 1)
		_, _, err := e.run(t, "--kubelet-url", withUser, "--auth=none")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "http://xxxxx@127.0.0.1:")
		assert.NotContains(t, err.Error(), basicPassword)
		assert.NotContains(t, err.Error(), "admin")
		assert.Empty(t, e.plain.Requests())
	})

	t.Run("a kubelet that redirects to http:// is not followed", func(t *testing.T) {
		e.plain.Reset()
		e.kubelet.Answer(http.StatusFound, "", 0, map[string]string{"Location": url + "/pods"})
		defer e.kubelet.Answer(0, "", 0, nil)
		_, _, err := e.run(t, "--kubelet-url", e.kubelet.URL, "--auth=token", "--token-file", fakecluster.TokenFile(t, fileToken), "--kubelet-ca-file", e.pki.CAFile)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the client does not follow")
		assert.Empty(t, e.plain.Requests())
	})
}

// With --insecure-skip-tls-verify, credentials go only with the explicit extra flag.
func TestNoCredentialsToUnverifiedKubelet(t *testing.T) {
	e := newEnv(t)
	certFile, keyFile := e.pki.ClientCert(t, "the-user")
	withCert := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{CertFile: certFile, KeyFile: keyFile})
	token := fakecluster.TokenFile(t, fileToken)
	url := e.kubelet.URL

	refused := []struct {
		name string
		args []string
	}{
		{"a token file", []string{"--kubelet-url", url, "--auth=token", "--token-file", token, "--insecure-skip-tls-verify"}},
		{"the kubeconfig's client certificate", []string{"--kubeconfig", withCert, "--kubelet-url", url, "--auth=kubeconfig", "--insecure-skip-tls-verify"}},
		{"auto: the minted token", []string{"--kubeconfig", withCert, "--node", "n1", "--insecure-skip-tls-verify"}},
	}
	for _, tt := range refused {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			e.kubelet.Reset()
			_, _, err := e.run(t, tt.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "whose certificate is not checked")
			assert.Contains(t, err.Error(), "--allow-credentials-to-unverified-kubelet")
			assert.Empty(t, e.kubelet.Requests(), "the unverified kubelet must receive nothing")
		})
	}

	t.Run("sent with --allow-credentials-to-unverified-kubelet, with a warning", func(t *testing.T) {
		e.kubelet.Reset()
		_, stderr, err := e.run(t, "--kubelet-url", url, "--auth=token", "--token-file", token, "--insecure-skip-tls-verify", "--allow-credentials-to-unverified-kubelet")
		require.NoError(t, err)
		assert.Equal(t, []string{"Bearer " + fileToken}, authorizations(e.kubelet.Recorder))
		assert.Contains(t, stderr, "go to whoever answers")
	})

	t.Run("client certificate sent with --allow-credentials-to-unverified-kubelet", func(t *testing.T) {
		e.kubelet.Reset()
		_, _, err := e.run(t, "--kubeconfig", withCert, "--kubelet-url", url, "--auth=kubeconfig", "--insecure-skip-tls-verify", "--allow-credentials-to-unverified-kubelet")
		require.NoError(t, err)
		assert.Equal(t, []string{"the-user"}, clientCerts(e.kubelet.Recorder))
	})

	t.Run("anonymous needs no extra flag", func(t *testing.T) {
		e.kubelet.Reset()
		_, _, err := e.run(t, "--kubelet-url", url, "--auth=none", "--insecure-skip-tls-verify")
		require.NoError(t, err)
		assert.Equal(t, []string{""}, authorizations(e.kubelet.Recorder))
		assert.Equal(t, []string{""}, clientCerts(e.kubelet.Recorder))
	})
}

// Outside a pod, auto sends kubelets a short-lived token of a dedicated ServiceAccount, never
// the user's own kubeconfig credentials; those go only with --auth=kubeconfig.
func TestAutoDoesNotForwardKubeconfigCredentials(t *testing.T) {
	e := newEnv(t)
	certFile, keyFile := e.pki.ClientCert(t, "the-user")
	kubeconfig := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	withCert := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{CertFile: certFile, KeyFile: keyFile})
	inPod := fakecluster.ServiceAccountDir(t, podToken, e.pki.CAFile)
	inCluster := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{TokenFile: filepath.Join(inPod, "token")})

	tests := []struct {
		name       string
		saDir      string
		args       []string
		wantAuth   string
		wantCert   string
		wantMinted bool
	}{
		{"auto, a kubeconfig token: the minted token goes", "", []string{"--kubeconfig", kubeconfig, "--node", "n1"}, "Bearer " + mintedToken, "", true},
		{"auto, a kubeconfig certificate: the minted token goes, no certificate", "", []string{"--kubeconfig", withCert, "--node", "n1"}, "Bearer " + mintedToken, "", true},
		{"auto in a pod, its in-cluster configuration: the pod's token, nothing minted", inPod, []string{"--kubeconfig", inCluster, "--node", "n1"}, "Bearer " + podToken, "", false},
		{"auto in a pod, another cluster's kubeconfig: the pod's token stays in its cluster, a token is minted", inPod, []string{"--kubeconfig", kubeconfig, "--node", "n1"}, "Bearer " + mintedToken, "", true},
		{"--auth=kubeconfig: the user's token, because asked", "", []string{"--kubeconfig", kubeconfig, "--node", "n1", "--auth=kubeconfig"}, "Bearer " + kubeconfigToken, "", false},
		{"--auth=kubeconfig: the user's certificate, because asked", "", []string{"--kubeconfig", withCert, "--node", "n1", "--auth=kubeconfig"}, "", "the-user", false},
		{"--token-file", "", []string{"--kubeconfig", kubeconfig, "--node", "n1", "--token-file", fakecluster.TokenFile(t, fileToken)}, "Bearer " + fileToken, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.kubelet.Reset()
			e.apiserver.Reset()
			dir := e.serviceAccountDir
			if tt.saDir != "" {
				dir = tt.saDir
			}
			_, _, err := e.runIn(t, dir, tt.args...)
			require.NoError(t, err)
			assert.Equal(t, []string{tt.wantAuth}, authorizations(e.kubelet.Recorder))
			assert.Equal(t, []string{tt.wantCert}, clientCerts(e.kubelet.Recorder))
			var minted []fakecluster.Request
			for _, req := range e.apiserver.Requests() {
				if strings.HasSuffix(req.Path, "/token") {
					minted = append(minted, req)
				}
				if tt.wantAuth != "Bearer "+podToken {
					assert.NotContains(t, req.Authorization, podToken, "the pod's token went to the apiserver: %s %s", req.Method, req.Path)
				}
			}
			if !tt.wantMinted {
				assert.Empty(t, minted)
				return
			}
			require.Len(t, minted, 1)
			assert.Equal(t, "/api/v1/namespaces/kubelet-reader/serviceaccounts/kubelet-reader/token", minted[0].Path)
			assert.Equal(t, int64(600), minted[0].ExpirationSeconds, "a short-lived token")
		})
	}

	t.Run("no such ServiceAccount: an error that says what to do, and nothing sent", func(t *testing.T) {
		e.kubelet.Reset()
		_, _, err := e.run(t, "--kubeconfig", kubeconfig, "--node", "n1", "--service-account", "nowhere/nobody")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "could not get a token for the ServiceAccount nowhere/nobody")
		assert.Contains(t, err.Error(), "kubectl apply -f examples/rbac/")
		assert.Contains(t, err.Error(), "--auth=kubeconfig")
		assert.Empty(t, e.kubelet.Requests())
	})
}

// --auth=none keeps TLS: anonymous over HTTPS, the certificate still checked.
func TestAuthNoneKeepsTLS(t *testing.T) {
	e := newEnv(t)
	other := fakecluster.NewPKI(t)
	kubeconfig := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})

	_, _, err := e.run(t, "--kubelet-url", e.kubelet.URL, "--auth=none", "--kubelet-ca-file", e.pki.CAFile)
	require.NoError(t, err)
	reqs := e.kubelet.Requests()
	require.Len(t, reqs, 1)
	assert.True(t, reqs[0].TLS)
	assert.Empty(t, reqs[0].Authorization)

	_, _, err = e.run(t, "--kubeconfig", kubeconfig, "--node", "n1", "--auth=none")
	require.NoError(t, err, "discovery, then anonymous HTTPS to the Node's port, checked against the cluster CA")

	e.kubelet.Reset()
	_, _, err = e.run(t, "--kubelet-url", e.kubelet.URL, "--auth=none", "--kubelet-ca-file", other.CAFile)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate not trusted")
}

// A flag that would do nothing in the chosen mode is an error naming it.
func TestIgnoredFlagsAreErrors(t *testing.T) {
	e := newEnv(t)
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	token := fakecluster.TokenFile(t, fileToken)
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{"--node", "n1", "--via=apiserver", "--kubelet-ca-file", e.pki.CAFile}, "kubelet-ca-file"},
		{[]string{"--node", "n1", "--via=apiserver", "--auth=token"}, "auth"},
		{[]string{"--node", "n1", "--via=apiserver", "--token-file", token}, "token-file"},
		{[]string{"--node", "n1", "--via=apiserver", "--insecure-skip-tls-verify"}, "insecure-skip-tls-verify"},
		{[]string{"--node", "n1", "--via=apiserver", "--http1"}, "http1"},
		{[]string{"--kubelet-url", e.kubelet.URL, "--kubelet-port", "10250"}, "kubelet-port"},
		{[]string{"--kubelet-url", e.kubelet.URL, "--kubelet-preferred-address-types", "Hostname"}, "kubelet-preferred-address-types"},
		{[]string{"--kubelet-url", e.kubelet.URL, "--via=apiserver"}, "kubelet-url"},
		{[]string{"--kubelet-url", e.kubelet.URL, "--via=auto"}, "via"},
		{[]string{"--kubelet-url", e.kubelet.URL, "--kubelet-tls-server-name=Hostname"}, "kubelet-tls-server-name"},
		{[]string{"--node", "n1", "--concurrency", "3"}, "concurrency"},
		{[]string{"--node", "n1", "--all-nodes-timeout", "1s"}, "all-nodes-timeout"},
		{[]string{"--kubelet-url", e.plain.URL, "--auth=none", "--kubelet-ca-file", e.pki.CAFile}, "kubelet-ca-file"},
		{[]string{"--kubelet-url", e.plain.URL, "--auth=none", "--insecure-skip-tls-verify"}, "insecure-skip-tls-verify"},
		{[]string{"--kubelet-url", e.plain.URL, "--auth=none", "--http1"}, "http1"},
		{[]string{"--kubelet-url", strings.Replace(e.plain.URL, "http://", "HTTP://", 1), "--auth=none", "--kubelet-ca-file", e.pki.CAFile}, "kubelet-ca-file"},
		{[]string{"--node", "n1", "--auth=kubeconfig", "--token-file", token}, "token-file"},
		{[]string{"--node", "n1", "--auth=none", "--token-file", token}, "token-file"},
		{[]string{"--node", "n1", "--auth=token", "--token-file", token, "--service-account", "a/b"}, "service-account"},
		{[]string{"--node", "n1", "--token-file", token, "--service-account", "a/b"}, "service-account"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := e.run(t, append([]string{"--kubeconfig", kc}, tt.args...)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--"+tt.flag+" would have no effect here")
		})
	}

	// Decided by the library, where the flag's meaning depends on what it finds: in a pod, with
	// its in-cluster configuration.
	inPod := fakecluster.ServiceAccountDir(t, podToken, "")
	inCluster := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{TokenFile: filepath.Join(inPod, "token")})
	for name, args := range map[string][]string{
		"--allow-credentials-to-unverified-kubelet without --insecure-skip-tls-verify": {"--kubelet-url", e.kubelet.URL, "--auth=none", "--allow-credentials-to-unverified-kubelet"},
		"--service-account in a pod, where the pod's token is used":                    {"--kubelet-url", e.kubelet.URL, "--service-account", "a/b"},
		"--kubelet-ca-file with --insecure-skip-tls-verify":                            {"--kubelet-url", e.kubelet.URL, "--auth=none", "--insecure-skip-tls-verify", "--kubelet-ca-file", e.pki.CAFile},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := e.runIn(t, inPod, append([]string{"--kubeconfig", inCluster}, args...)...)
			require.Error(t, err)
			assert.Empty(t, e.kubelet.Requests())
		})
	}
}

// A broken kubeconfig or an unknown --context is an error even where the client could do
// without a kubeconfig.
func TestKubeconfigErrorsNotSwallowed(t *testing.T) {
	e := newEnv(t)
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	broken := fakecluster.TokenFile(t, "apiVersion: v1\nkind: Config\nclusters: [this is not yaml")
	direct := []string{"--kubelet-url", e.plain.URL, "--auth=none"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown --context", append([]string{"--kubeconfig", kc, "--context", "nosuch"}, direct...), `context "nosuch" does not exist`},
		{"--context without any kubeconfig", append([]string{"--context", "nosuch"}, direct...), "nosuch"},
		{"--kubeconfig that does not exist", append([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, direct...), "/nonexistent/kubeconfig"},
		{"a kubeconfig that does not parse", append([]string{"--kubeconfig", broken}, direct...), "kubeconfig"},
		{"no kubeconfig, and discovery needs one", []string{"--node", "n1"}, "no cluster to ask"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.plain.Reset()
			_, _, err := e.run(t, tt.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, e.plain.Requests())
		})
	}
	t.Run("no kubeconfig at all, none needed", func(t *testing.T) {
		_, _, err := e.run(t, direct...)
		require.NoError(t, err)
	})
}

func crashLooping() corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crasher", UID: "u-1",
		Annotations: map[string]string{"kubernetes.io/config.source": "file"}}}
	p.Spec.Containers = []corev1.Container{{Name: "main", Image: "x"}}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.0.0.7"
	p.Status.StartTime = &metav1.Time{Time: testNow.Add(-3 * time.Hour)}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 7,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(testNow.Add(-5 * time.Minute))}}}}
	return p
}

// The table says what kubectl would: READY, STATUS, RESTARTS; wide adds VIA.
func TestTableOutput(t *testing.T) {
	e := newEnv(t, crashLooping())
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	stdout, _, err := e.run(t, "--kubeconfig", kc, "--node", "n1")
	require.NoError(t, err)
	assert.Equal(t, "NODE   NAMESPACE   NAME      READY   STATUS             RESTARTS     SOURCE\n"+
		"n1     default     crasher   0/1     CrashLoopBackOff   7 (5m ago)   file\n", stdout)

	stdout, _, err = e.run(t, "--kubeconfig", kc, "--node", "n1", "-o", "wide")
	require.NoError(t, err)
	assert.Equal(t, "NODE   NAMESPACE   NAME      READY   STATUS             RESTARTS     SOURCE   IP         VIA       UID   AGE\n"+
		"n1     default     crasher   0/1     CrashLoopBackOff   7 (5m ago)   file     10.0.0.7   kubelet   u-1   3h\n", stdout)

	e.apiserver.Proxy(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(corev1.PodList{Items: []corev1.Pod{crashLooping()}})
	})
	stdout, _, err = e.run(t, "--kubeconfig", kc, "--node", "n1", "-o", "wide", "--via=apiserver")
	require.NoError(t, err)
	assert.Contains(t, stdout, "10.0.0.7   apiserver   u-1")
}

// No pods, or no nodes: every -o json and -o yaml path prints what kubectl would, "items": []
// (items: [] in YAML) and doctor's [] — never null, even when the kubelet itself wrote
// "items": null, as the real kubelet does for no pods.
func TestEmptyLists(t *testing.T) {
	const listJSON = "{\n    \"kind\": \"PodList\",\n    \"apiVersion\": \"v1\",\n    \"metadata\": {},\n    \"items\": []\n}\n"
	const listYAML = "apiVersion: v1\nitems: []\nkind: PodList\nmetadata: {}\n"
	kubeletNull := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":null}`)
	}
	tests := []struct {
		name  string
		setup func(e *env) // the world beyond one node whose kubelet has no pods
		args  func(e *env, kc, token string) []string
		want  string
	}{
		{"--kubelet-url, json", nil, func(e *env, _, _ string) []string {
			return []string{"--kubelet-url", e.plain.URL, "--auth=none", "-o", "json"}
		}, listJSON},
		{"--kubelet-url, yaml", nil, func(e *env, _, _ string) []string {
			return []string{"--kubelet-url", e.plain.URL, "--auth=none", "-o", "yaml"}
		}, listYAML},
		{"--node, json", nil, func(_ *env, kc, token string) []string {
			return []string{"--kubeconfig", kc, "--node", "n1", "--token-file", token, "-o", "json"}
		}, listJSON},
		{"--node, yaml", nil, func(_ *env, kc, token string) []string {
			return []string{"--kubeconfig", kc, "--node", "n1", "--token-file", token, "-o", "yaml"}
		}, listYAML},
		{"--via=apiserver, the kubelet wrote null, json", func(e *env) { e.apiserver.Proxy(kubeletNull) }, func(_ *env, kc, _ string) []string {
			return []string{"--kubeconfig", kc, "--node", "n1", "--via=apiserver", "-o", "json"}
		}, listJSON},
		{"--via=apiserver, the kubelet wrote null, yaml", func(e *env) { e.apiserver.Proxy(kubeletNull) }, func(_ *env, kc, _ string) []string {
			return []string{"--kubeconfig", kc, "--node", "n1", "--via=apiserver", "-o", "yaml"}
		}, listYAML},
		{"--all-nodes, no nodes, json", func(e *env) { e.apiserver.SetNodes() }, func(_ *env, kc, token string) []string {
			return []string{"--kubeconfig", kc, "--all-nodes", "--token-file", token, "-o", "json"}
		}, listJSON},
		{"--all-nodes, no nodes, yaml", func(e *env) { e.apiserver.SetNodes() }, func(_ *env, kc, token string) []string {
			return []string{"--kubeconfig", kc, "--all-nodes", "--token-file", token, "-o", "yaml"}
		}, listYAML},
		{"doctor --all-nodes, no nodes, json", func(e *env) { e.apiserver.SetNodes() }, func(_ *env, kc, token string) []string {
			return []string{"doctor", "--kubeconfig", kc, "--all-nodes", "--token-file", token, "-o", "json"}
		}, "[]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
			token := fakecluster.TokenFile(t, fileToken)
			if tt.setup != nil {
				tt.setup(e)
			}
			stdout, stderr, err := e.run(t, tt.args(e, kc, token)...)
			require.NoError(t, err, stderr)
			assert.Equal(t, tt.want, stdout)
			assert.NotContains(t, stdout, "null")
		})
	}
}

// The command's own errors, read as a user reads them.
func TestErrorMessages(t *testing.T) {
	e := newEnv(t)
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	token := fakecluster.TokenFile(t, fileToken)

	// The kubelet would answer a minute later; the timeout is generous enough for the TLS
	// handshake on a loaded machine. What is checked is the order of events: the client hung up
	// before the kubelet answered.
	t.Run("a slow kubelet: timed out after N, and no failover", func(t *testing.T) {
		e.kubelet.Answer(0, "", time.Minute, nil)
		defer e.kubelet.Answer(0, "", 0, nil)
		e.apiserver.Reset()
		e.kubelet.Reset()
		_, _, err := e.run(t, "--kubeconfig", kc, "--node", "n1", "--token-file", token, "--request-timeout", "2s")
		require.Error(t, err)
		require.Eventually(t, func() bool { return e.kubelet.Abandoned() == 1 }, 30*time.Second, 10*time.Millisecond,
			"the client hangs up before the kubelet answers")
		assert.Contains(t, err.Error(), "timed out after 2s waiting for https://127.0.0.1:")
		assert.Contains(t, err.Error(), "accepted the connection but did not answer in time")
		for _, req := range e.apiserver.Requests() {
			assert.NotContains(t, req.Path, "/proxy/", "a slow kubelet is not a reason to fail over")
		}
	})

	t.Run("the kubelet's plain-text body is shown", func(t *testing.T) {
		e.kubelet.Answer(http.StatusInternalServerError, "failed to list pods: the pod manager is not ready\n", 0, nil)
		defer e.kubelet.Answer(0, "", 0, nil)
		_, _, err := e.run(t, "--kubeconfig", kc, "--node", "n1", "--token-file", token)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "500 Internal Server Error: failed to list pods: the pod manager is not ready")
	})
}

// doctor: one line per check, the fix for the first failure, -o json, and a non-zero exit when
// a check fails.
func TestDoctorCommand(t *testing.T) {
	e := newEnv(t)
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	e.apiserver.User(mintedToken, "system:serviceaccount:kubelet-reader:kubelet-reader", "get nodes/pods")

	stdout, stderr, err := e.run(t, "doctor", "--kubeconfig", kc, "--node", "n1")
	require.NoError(t, err, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 7, stdout)
	assert.Regexp(t, `^NODE +CHECK +RESULT +DETAIL$`, lines[0])
	for i, check := range []string{"discovery", "dns/tcp", "tls", "credentials", "permissions", "fetch"} {
		assert.Regexp(t, `^n1 +`+check+` +ok +`, lines[i+1])
	}
	assert.Contains(t, stdout, "the kubelet will see system:serviceaccount:kubelet-reader:kubelet-reader")
	assert.Contains(t, stdout, "get nodes/pods: yes; get nodes/proxy: no")
	assert.Empty(t, stderr)

	other := fakecluster.NewPKI(t)
	stdout, stderr, err = e.run(t, "doctor", "--kubeconfig", kc, "--node", "n1", "--kubelet-ca-file", other.CAFile)
	require.Error(t, err)
	assert.Equal(t, "2 checks failed", err.Error(), "tls and fetch")
	assert.Regexp(t, `n1 +tls +FAIL +SANs \[127.0.0.1\]`, stdout)
	assert.Equal(t, "fix (n1, tls): not signed by the CA the client trusts: --kubelet-ca-file=<the CA of the kubelets' serving certificates>\n", stderr,
		"one fix, for the first failure")

	stdout, _, err = e.run(t, "doctor", "--kubeconfig", kc, "--node", "n1", "-o", "json")
	require.NoError(t, err)
	var checks []map[string]string
	require.NoError(t, json.Unmarshal([]byte(stdout), &checks))
	require.Len(t, checks, 6)
	assert.Equal(t, map[string]string{"node": "n1", "check": "permissions", "verdict": "ok", "detail": "get nodes/pods: yes; get nodes/proxy: no"}, checks[4])

	_, _, err = e.run(t, "doctor", "--kubeconfig", kc, "--kubelet-url", e.kubelet.URL)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--kubelet-url would have no effect here")
	for _, secret := range []string{mintedToken, kubeconfigToken} {
		assert.NotContains(t, stdout, secret)
	}
}

// --watch prints what changed between polls, as an agent's pod cache sees it.
func TestWatch(t *testing.T) {
	web := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "w-1"}}
	web.Spec.Containers = []corev1.Container{{Name: "main", Image: "x"}}
	web.Status.Phase = corev1.PodRunning
	web.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	e := newEnv(t, web)
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before the servers close: their Close waits for the informer's watch
	o := &clientOptions{now: func() time.Time { return testNow }}
	o.opts.ServiceAccountDir = e.serviceAccountDir
	cmd := newClientCommand(ctx, o)
	var out, errOut syncbuf.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--kubeconfig", kc, "--node", "n1", "--watch", "--interval", "20ms"})
	done := make(chan error)
	go func() { done <- cmd.Execute() }()
	waitFor := func(line string) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Contains(out.String()+errOut.String(), line) }, 10*time.Second, 10*time.Millisecond,
			"waiting for %q in:\n%s\n%s", line, &out, &errOut) // pointers: what they hold when the wait gives up
	}

	waitFor("ADD    n1 default/web 1/1 Running 0\n")
	crashing := crashLooping()
	crashing.Name, crashing.UID = "web", "w-1"
	e.kubelet.SetPods(crashing)
	waitFor("UPDATE n1 default/web READY 1/1 → 0/1, STATUS Running → CrashLoopBackOff, RESTARTS 0 → 7, IP <none> → 10.0.0.7\n")
	e.kubelet.Answer(http.StatusServiceUnavailable, "busy", 0, nil) // a kubelet that does not answer removes nothing
	waitFor("503 Service Unavailable: busy")
	e.kubelet.Answer(0, "", 0, nil)
	e.kubelet.SetPods()
	waitFor("REMOVE n1 default/web\n")
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, 1, strings.Count(out.String(), "REMOVE"), "removed once, not while its kubelet failed:\n%s", out.String())
	assert.Equal(t, 3, strings.Count(out.String(), "\n"), "one line per change, nothing for polls that changed nothing:\n%s", out.String())
	var watches int
	for _, req := range e.apiserver.Requests() {
		assert.NotEqual(t, "/api/v1/nodes/n1", req.Path, "no GET per poll: the informer answers")
		if strings.Contains(req.Query, "watch=true") {
			watches++
		}
	}
	assert.Equal(t, 1, watches, "one watch for the whole run")

	_, _, err := e.run(t, "--kubeconfig", kc, "--node", "n1", "--watch", "-o", "json")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--watch prints changes, one line each; -o json has no effect with it")
}

// The other read endpoints print what the kubelet wrote: JSON indented, one block per node.
func TestReadEndpointOutput(t *testing.T) {
	e := newEnv(t)
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	e.apiserver.SetNodes(fakecluster.Node("n1", e.kubelet.Port), fakecluster.Node("n2", e.kubelet.Port))
	token := fakecluster.TokenFile(t, fileToken)

	stdout, _, err := e.run(t, "--kubeconfig", kc, "--node", "n1", "--token-file", token, "--endpoint", "healthz")
	require.NoError(t, err)
	assert.Equal(t, "ok\n", stdout)

	stdout, _, err = e.run(t, "--kubeconfig", kc, "--all-nodes", "--token-file", token, "--endpoint", "configz")
	require.NoError(t, err)
	assert.Equal(t, "==> n1 <==\n{\n  \"kubeletconfig\": {\n    \"port\": 10250\n  }\n}\n==> n2 <==\n{\n  \"kubeletconfig\": {\n    \"port\": 10250\n  }\n}\n", stdout)
	for _, req := range e.kubelet.Requests() {
		assert.Equal(t, "Bearer "+fileToken, req.Authorization)
	}

	for args, want := range map[string]string{
		"--endpoint healthz -o json":     "-o would have no effect here: --endpoint=healthz is printed as the kubelet wrote it",
		"--endpoint configz --watch":     "--watch follows pods; --endpoint=configz is not a pod list",
		"--endpoint nodes/proxy/exec":    `unknown --endpoint "nodes/proxy/exec"`,
		"--endpoint runningpods -o json": "",
	} {
		t.Run(args, func(t *testing.T) {
			_, _, err := e.run(t, append([]string{"--kubeconfig", kc, "--node", "n1", "--token-file", token}, strings.Fields(args)...)...)
			if want == "" {
				require.Error(t, err, "the fake kubelet serves no /runningpods/: the flag combination itself is fine")
				assert.Contains(t, err.Error(), "404 Not Found")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

// --kubelet-url's user info is refused and never shown, however the URL is written.
func TestKubeletURLUserInfoNeverShown(t *testing.T) {
	e := newEnv(t)
	for _, raw := range []string{
		"https://admin:s3cret@127.0.0.1:10250",
		"admin:s3cret@127.0.0.1:10250",
		"https://admin:s3c/ret@127.0.0.1:10250",
		"https://admin:s3c#ret@127.0.0.1:10250",
		`https://admin:s3c"ret@127.0.0.1:10250`,
		"https://admin:s3c ret@127.0.0.1:10250",
	} {
		t.Run(raw, func(t *testing.T) {
			stdout, stderr, err := e.run(t, "--kubelet-url", raw, "--auth=none")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "xxxxx@127.0.0.1:10250 holds credentials (user info)")
			assert.NotContains(t, stdout+stderr+err.Error(), "s3c")
			assert.NotContains(t, stdout+stderr+err.Error(), "admin")
		})
	}
}

// A number or duration that would silently mean something else (the library's default for 0, no
// timeout or a past deadline for a negative one, a port that fails only at dial time) is refused
// at the flag, before anything is asked: one line naming the flag and the value.
func TestNumberFlagsChecked(t *testing.T) {
	e := newEnv(t)
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--node", "n1", "--request-timeout", "0"}, "--request-timeout 0s: must be more than 0"},
		{[]string{"--node", "n1", "--request-timeout", "-1s"}, "--request-timeout -1s: must be more than 0"},
		{[]string{"doctor", "--node", "n1", "--request-timeout", "-1s"}, "--request-timeout -1s: must be more than 0"},
		{[]string{"--all-nodes", "--all-nodes-timeout", "-1s"}, "--all-nodes-timeout -1s: must be more than 0"},
		{[]string{"--all-nodes", "--all-nodes-timeout", "0"}, "--all-nodes-timeout 0s: must be more than 0"},
		{[]string{"--all-nodes", "--concurrency", "0"}, "--concurrency 0: must be 1 or more"},
		{[]string{"--all-nodes", "--concurrency", "-3"}, "--concurrency -3: must be 1 or more"},
		{[]string{"--node", "n1", "--kubelet-port", "-1"}, "--kubelet-port -1: a port is 1 to 65535"},
		{[]string{"--node", "n1", "--kubelet-port", "70000"}, "--kubelet-port 70000: a port is 1 to 65535"},
		{[]string{"doctor", "--node", "n1", "--kubelet-port", "70000"}, "--kubelet-port 70000: a port is 1 to 65535"},
		{[]string{"--node", "n1", "--interval", "-1s"}, "--interval -1s: must be 0 (once) or more"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			e.apiserver.Reset()
			_, _, err := e.run(t, append(tt.args, "--kubeconfig", kc)...)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "%s\ndoes not start with\n%s", err, tt.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.Empty(t, e.apiserver.Requests(), "nothing was asked")
			assert.Empty(t, e.kubelet.Requests(), "nothing was asked")
		})
	}
	// The ends of the ranges are taken.
	_, _, err := e.run(t, "--kubeconfig", kc, "--all-nodes", "--concurrency", "1", "--request-timeout", "1ms", "--all-nodes-timeout", "1ms")
	if err != nil {
		assert.NotContains(t, err.Error(), "must be")
	}
}
