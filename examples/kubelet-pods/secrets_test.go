package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
)

var (
	binaryOnce sync.Once
	binary     string
	binaryErr  error
)

// builtClient is this program, built once per test run: -v is cli.Run's flag, and
// klog writes to the process's stderr, so the whole output is only seen from outside.
func builtClient(t *testing.T) string {
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubelet-pods-test-")
		if err != nil {
			binaryErr = err
			return
		}
		binary = filepath.Join(dir, "client")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, binaryErr)
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// No credential is ever printed, not even at -v=10 where client-go logs every request, its
// headers and bodies: on success and on every error path, for a token file, the kubeconfig's
// own token and basic-auth password, and a token minted through TokenRequest (whose response
// body is the token).
func TestSecretsNeverPrinted(t *testing.T) {
	bin := builtClient(t)
	e := newEnv(t)
	other := fakecluster.NewPKI(t)
	token := fakecluster.TokenFile(t, fileToken)
	withToken := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	withBasic := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Username: "u", Password: basicPassword})
	e.apiserver.Proxy(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[pods proxy])")
	})
	secrets := []string{fileToken, kubeconfigToken, mintedToken, basicPassword}

	tests := []struct {
		name    string
		kubelet func() // how the kubelet answers
		args    []string
		wantOK  bool
		// wantOut proves the path was taken and -v=10 was on.
		wantOut []string
	}{
		{"token file, 200", nil, []string{"--kubelet-url", e.kubelet.URL, "--auth=token", "--token-file", token, "--kubelet-ca-file", e.pki.CAFile}, true,
			[]string{"Authorization: Bearer <masked>"}},
		{"token file, 401", func() { e.kubelet.Answer(401, "Unauthorized", 0, nil) }, []string{"--kubelet-url", e.kubelet.URL, "--auth=token", "--token-file", token, "--kubelet-ca-file", e.pki.CAFile}, false,
			[]string{"unauthorized: GET", "Authorization: Bearer <masked>"}},
		{"token file, 403 with the kubelet's text", func() {
			e.kubelet.Answer(403, "Forbidden (user=system:serviceaccount:x:y, verb=get, resource=nodes, subresource(s)=[pods proxy])", 0, nil)
		}, []string{"--kubelet-url", e.kubelet.URL, "--auth=token", "--token-file", token, "--kubelet-ca-file", e.pki.CAFile}, false,
			[]string{"system:serviceaccount:x:y may not get nodes/pods"}},
		{"token file, untrusted certificate", nil, []string{"--kubelet-url", e.kubelet.URL, "--auth=token", "--token-file", token, "--kubelet-ca-file", other.CAFile}, false,
			[]string{"certificate not trusted"}},
		{"token file over http://, refused", nil, []string{"--kubelet-url", e.plain.URL, "--auth=token", "--token-file", token}, false,
			[]string{"refusing to send"}},
		{"kubeconfig token, --auth=kubeconfig, 200", nil, []string{"--kubeconfig", withToken, "--node", "n1", "--auth=kubeconfig"}, true,
			[]string{"Authorization: Bearer <masked>", "/api/v1/nodes/n1"}},
		{"kubeconfig token, --auth=kubeconfig, 401", func() { e.kubelet.Answer(401, "Unauthorized", 0, nil) }, []string{"--kubeconfig", withToken, "--node", "n1", "--auth=kubeconfig"}, false,
			[]string{"the kubeconfig's own credentials"}},
		{"kubeconfig basic auth, --auth=kubeconfig, 401", func() { e.kubelet.Answer(401, "Unauthorized", 0, nil) }, []string{"--kubeconfig", withBasic, "--node", "n1", "--auth=kubeconfig"}, false,
			[]string{"Authorization: Basic <masked>"}},
		{"minted token (auto), 200", nil, []string{"--kubeconfig", withToken, "--node", "n1"}, true,
			[]string{"/serviceaccounts/kubelet-reader/token"}},
		{"minted token (auto), 401", func() { e.kubelet.Answer(401, "Unauthorized", 0, nil) }, []string{"--kubeconfig", withToken, "--node", "n1"}, false,
			[]string{"TokenRequest"}},
		{"minted token, through the proxy, 403 relayed", nil, []string{"--kubeconfig", withToken, "--node", "n1", "--via=apiserver"}, false,
			[]string{"relayed from the kubelet"}},
		// The kubelet would answer a minute later; the timeout leaves room for the TokenRequest
		// and the TLS handshake on a loaded machine.
		{"minted token, slow kubelet", func() { e.kubelet.Answer(0, "", time.Minute, nil) }, []string{"--kubeconfig", withToken, "--node", "n1", "--request-timeout=2s"}, false,
			[]string{"timed out after 2s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.kubelet.Answer(0, "", 0, nil)
			if tt.kubelet != nil {
				tt.kubelet()
			}
			cmd := exec.Command(bin, append(tt.args, "-v=10", "--service-account-dir", e.serviceAccountDir)...)
			// No kubeconfig, in-cluster configuration or home of this machine.
			cmd.Env = []string{"HOME=" + t.TempDir(), "KUBECONFIG=", "KUBERNETES_SERVICE_HOST=", "PATH=" + os.Getenv("PATH")}
			out, err := cmd.CombinedOutput()
			if tt.wantOK {
				require.NoError(t, err, "%s", out)
			} else {
				require.Error(t, err, "%s", out)
			}
			for _, want := range tt.wantOut {
				assert.Contains(t, string(out), want)
			}
			assert.Contains(t, string(out), `"Kubelet credentials"`, "-v=10 is on")
			for _, secret := range secrets {
				assert.NotContains(t, string(out), secret)
				assert.NotContains(t, string(out), secret[:12], "not even a prefix")
			}
		})
	}
}
