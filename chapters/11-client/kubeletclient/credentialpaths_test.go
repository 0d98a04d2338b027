package kubeletclient

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

const kubeconfigSecret = "kubeconfig-secret-token"

// recorder is a loopback server that remembers the Authorization of every request it gets.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newRecorder(t *testing.T, tlsServer bool, h http.HandlerFunc) *recorder {
	r := &recorder{}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auths = append(r.auths, req.Method+" "+req.URL.Path+" "+req.Header.Get("Authorization"))
		r.mu.Unlock()
		if h != nil {
			h(w, req)
		}
	}))
	if tlsServer {
		r.StartTLS()
	} else {
		r.Start()
	}
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

// kubeconfigFor is what a kubeconfig with a token and the server's CA loads as.
func kubeconfigFor(s *httptest.Server) *rest.Config {
	cfg := &rest.Config{Host: s.URL, BearerToken: kubeconfigSecret}
	if s.TLS != nil {
		cfg.CAData = certPEM(s)
	}
	return cfg
}

func certPEM(s *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// The TokenRequest goes to the apiserver with the kubeconfig's credentials, which client-go's
// transport adds to every request it sends, a redirected one too: a redirect, followed, would
// carry them — and, for a 307 or 308, the POST — wherever the answer says. The client follows
// none.
func TestTokenRequestRefusesRedirects(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, targetTLS := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d to https=%v", code, targetTLS), func(t *testing.T) {
				target := newRecorder(t, targetTLS, func(w http.ResponseWriter, _ *http.Request) {
					writeTokenRequest(w, "stolen-token")
				})
				apiserver := newRecorder(t, true, func(w http.ResponseWriter, req *http.Request) {
					http.Redirect(w, req, target.URL+req.URL.Path, code)
				})
				c, err := New(kubeconfigFor(apiserver.Server), Options{Auth: AuthServiceAccount, ServiceAccount: "ns/sa", Via: ViaKubelet})
				require.NoError(t, err)
				_, err = c.minted.get()
				require.Error(t, err, "a redirect is no token")
				assert.Contains(t, err.Error(), "a redirect to "+target.URL)
				assert.Contains(t, err.Error(), "not followed")
				assert.Empty(t, target.requests(), "the redirect's target gets nothing, the kubeconfig's token least of all")
				assert.Len(t, apiserver.requests(), 1)
			})
		}
	}
}

func writeTokenRequest(w http.ResponseWriter, token string) {
	tr := authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"}}
	tr.Status.Token = token
	tr.Status.ExpirationTimestamp = metav1.Now()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(tr)
}

// A ServiceAccount's namespace and name become a path of the TokenRequest; what the apiserver
// would not accept as a name ("../x", "a/b") is refused before any request, with the reason.
func TestServiceAccountNamesAreChecked(t *testing.T) {
	tests := []struct {
		account string
		wantErr string // "" for a valid one
	}{
		{"kubelet-reader/kubelet-reader", ""},
		{"ns/sa.with.dots", ""},
		{"../x", `the namespace ".." is not a namespace's name`},
		{"a/b/c", `"b/c" is not a ServiceAccount's name`},
		{"kubelet-reader/../x", `"../x" is not a ServiceAccount's name`},
		{"ns/..", `".." is not a ServiceAccount's name`},
		{"ns/a%2fb", `"a%2fb" is not a ServiceAccount's name`},
		{"ns/Upper", `"Upper" is not a ServiceAccount's name`},
		{"ns/a b", `"a b" is not a ServiceAccount's name`},
		{"ns/x\x1b[2J", `"x\x1b[2J" is not a ServiceAccount's name`},
		{"Ns.dots/sa", `the namespace "Ns.dots" is not a namespace's name`},
		{"nosla", `want NAMESPACE/NAME`},
		{"/sa", `want NAMESPACE/NAME`},
	}
	apiserver := newRecorder(t, true, func(w http.ResponseWriter, _ *http.Request) { writeTokenRequest(w, "t") })
	for _, tt := range tests {
		t.Run(tt.account, func(t *testing.T) {
			_, _, err := ParseServiceAccount(tt.account)
			_, newErr := New(kubeconfigFor(apiserver.Server), Options{Auth: AuthServiceAccount, ServiceAccount: tt.account, Via: ViaKubelet})
			if tt.wantErr == "" {
				assert.NoError(t, err)
				assert.NoError(t, newErr)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "\x1b", "the reader's own text is quoted too")
			require.Error(t, newErr)
			assert.Equal(t, "Options.ServiceAccount "+err.Error(), newErr.Error())
		})
	}
	assert.Empty(t, apiserver.requests(), "New sends nothing, and a bad name never became a request")
}

// A token meant for kubelets goes to the apiserver (doctor's SelfSubjectReview) only when the
// apiserver's certificate is checked: the kubeconfig's insecure-skip-tls-verify covers its own
// credentials, not a token that kubelets accept. Over a verified connection it does go.
func TestDoctorIdentityNeedsAVerifiedAPIServer(t *testing.T) {
	const kubeletToken = "token-meant-for-kubelets"
	apiserver := newRecorder(t, true, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(authenticationv1.SelfSubjectReview{
			TypeMeta: metav1.TypeMeta{Kind: "SelfSubjectReview", APIVersion: "authentication.k8s.io/v1"},
			Status:   authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: "u"}},
		})
	})
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(kubeletToken), 0o600))
	tests := []struct {
		name     string
		insecure bool
		wantSent bool
	}{
		{"insecure-skip-tls-verify: refused", true, false},
		{"the cluster's CA: sent", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := kubeconfigFor(apiserver.Server)
			if tt.insecure {
				cfg.CAData, cfg.Insecure = nil, true
			}
			c, err := New(cfg, Options{Auth: AuthToken, TokenFile: tokenFile, Via: ViaKubelet, KubeletCAFile: writeCA(t, apiserver.Server)})
			require.NoError(t, err)
			before := len(apiserver.requests())
			user, err := whoAmI(c)
			sent := false
			for _, r := range apiserver.requests()[before:] {
				sent = sent || strings.Contains(r, kubeletToken)
			}
			assert.Equal(t, tt.wantSent, sent)
			if tt.wantSent {
				require.NoError(t, err)
				assert.Equal(t, "u", user.Username)
				return
			}
			var refused *CredentialsRefusedError
			require.ErrorAs(t, err, &refused)
			assert.Contains(t, err.Error(), "whose certificate is not checked (the kubeconfig's insecure-skip-tls-verify)")
			assert.Empty(t, apiserver.requests()[before:], "nothing was sent")
		})
	}
}

// whoAmI is doctor's SelfSubjectReview, with the kubelet's credentials as CredentialsConfig gives them.
func whoAmI(c *Client) (authenticationv1.UserInfo, error) {
	cfg, err := c.CredentialsConfig()
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	cs, err := NewAPIServerClient(cfg, 0)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return review.Status.UserInfo, nil
}

func writeCA(t *testing.T, s *httptest.Server) string {
	path := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(path, certPEM(s), 0o600))
	return path
}

// A TokenRequest over http:// would bring the token back in clear: it is not sent.
func TestTokenRequestNotOverPlainHTTP(t *testing.T) {
	apiserver := newRecorder(t, false, func(w http.ResponseWriter, _ *http.Request) { writeTokenRequest(w, "t") })
	_, err := New(kubeconfigFor(apiserver.Server), Options{Auth: AuthServiceAccount, ServiceAccount: "ns/sa", Via: ViaKubelet})
	var refused *CredentialsRefusedError
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, err.Error(), "refusing to send a TokenRequest for the ServiceAccount ns/sa over plain http://")
	assert.Empty(t, apiserver.requests())
}

// Every answer is read up to a bound, and one longer than it is an error — never an answer cut
// short and decoded as if whole, nor an unbounded read.
func TestAnswersAreBounded(t *testing.T) {
	const limit = 4096
	bigPods := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for i := range 100 {
		bigPods.Items = append(bigPods.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%03d", i), Namespace: "default"}})
	}
	big, err := json.Marshal(bigPods)
	require.NoError(t, err)
	require.Greater(t, len(big), limit)
	small, err := json.Marshal(corev1.PodList{TypeMeta: bigPods.TypeMeta, Items: bigPods.Items[:2]})
	require.NoError(t, err)

	t.Run("a kubelet's /pods", func(t *testing.T) {
		body := big
		kubelet := newRecorder(t, false, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
		c, err := New(nil, Options{Auth: AuthNone, MaxResponseBytes: limit})
		require.NoError(t, err)
		r := c.FetchURL(context.Background(), kubelet.URL)
		var tooLarge *TooLargeError
		require.ErrorAs(t, r.Err, &tooLarge)
		assert.Contains(t, r.Err.Error(), "the kubelet's answer to GET "+kubelet.URL+"/pods is longer than 4096 bytes")
		assert.Nil(t, r.Pods)

		body = small // under the bound: read whole
		r = c.FetchURL(context.Background(), kubelet.URL)
		require.NoError(t, r.Err)
		assert.Len(t, r.Pods, 2)
	})

	t.Run("a kubelet's error body", func(t *testing.T) {
		kubelet := newRecorder(t, false, func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			for req.Context().Err() == nil { // a body without end, until the client hangs up
				if _, err := w.Write([]byte(strings.Repeat("x", 64<<10))); err != nil {
					return
				}
			}
		})
		c, err := New(nil, Options{Auth: AuthNone, Timeout: 20 * time.Second})
		require.NoError(t, err)
		r := c.FetchURL(context.Background(), kubelet.URL)
		require.Error(t, r.Err)
		assert.Contains(t, r.Err.Error(), "403 Forbidden", "the answer, not a timeout reading it")
		assert.Contains(t, r.Err.Error(), "xxx… (longer than 65536 bytes: the rest was not read)")
		assert.Less(t, len(r.Err.Error()), 4096, "what is quoted stays short")
	})

	t.Run("the apiserver: a Node, the node proxy", func(t *testing.T) {
		apiserver := newRecorder(t, true, func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if strings.Contains(req.URL.Path, "/proxy/") {
				_, _ = w.Write(big)
				return
			}
			n := corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "n1",
				Annotations: map[string]string{"big": strings.Repeat("x", 2*limit)}}}
			_ = json.NewEncoder(w).Encode(n)
		})
		c, err := New(kubeconfigFor(apiserver.Server), Options{Via: ViaAPIServer, MaxResponseBytes: limit})
		require.NoError(t, err)
		_, err = c.Node(context.Background(), "n1")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is longer than 4096 bytes")
		r := c.Pods(context.Background(), "n1")
		require.Error(t, r.Err)
		assert.Contains(t, r.Err.Error(), "is longer than 4096 bytes")
	})

	t.Run("the TokenRequest's answer", func(t *testing.T) {
		apiserver := newRecorder(t, true, func(w http.ResponseWriter, _ *http.Request) {
			writeTokenRequest(w, strings.Repeat("t", int(maxTokenResponseBytes)))
		})
		c, err := New(kubeconfigFor(apiserver.Server), Options{Auth: AuthServiceAccount, ServiceAccount: "ns/sa", Via: ViaKubelet})
		require.NoError(t, err)
		_, err = c.minted.get()
		var tooLarge *TooLargeError
		require.ErrorAs(t, err, &tooLarge)
		assert.Contains(t, err.Error(), "the TokenRequest's answer is longer than 1048576 bytes")
	})
}

func TestReadAtMost(t *testing.T) {
	tests := []struct {
		n       int
		wantErr bool
	}{{0, false}, {9, false}, {10, false}, {11, true}, {1000, true}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			data, err := readAtMost(strings.NewReader(strings.Repeat("a", tt.n)), 10, "it")
			if tt.wantErr {
				assert.EqualError(t, err, "it is longer than 10 bytes, the most this client reads (Options.MaxResponseBytes): not read")
				assert.Nil(t, data)
				return
			}
			require.NoError(t, err)
			assert.Len(t, data, tt.n)
		})
	}
	// The wrapper around client-go's bodies says the same, past its bound.
	b := &limitedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("a", 11))), left: 10, err: errors.New("too large")}
	_, err := io.ReadAll(b)
	assert.EqualError(t, err, "too large")
	b = &limitedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("a", 10))), left: 10, err: errors.New("too large")}
	data, err := io.ReadAll(b)
	assert.NoError(t, err)
	assert.Len(t, data, 10)
}

func TestPrintable(t *testing.T) {
	tests := []struct {
		in, want     string
		keepNewlines bool
	}{
		{"plain text, ünïcode", "plain text, ünïcode", false},
		{"a\x1b[31mred", `a\x1b[31mred`, false},
		{"line\nnext\tcell", `line\nnext\tcell`, false},
		{"line\nnext\tcell\r", "line\nnext\tcell\\r", true},
		{"\u009b2J", `\u009b2J`, false},
		{"bad \xff byte", `bad \xff byte`, false},
		{"replacement \ufffd kept, \xef\xbf cut", "replacement \ufffd kept, \\xef\\xbf cut", false},
		{"rtl \u202e override", `rtl \u202e override`, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Printable(tt.in, tt.keepNewlines), "%q", tt.in)
	}
}
