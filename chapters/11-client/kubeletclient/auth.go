package kubeletclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// AuthMode says how the client proves who it is to the kubelet.
type AuthMode string

const (
	// AuthAuto chooses, in this order: --token-file if given; the pod's own ServiceAccount token
	// when the apiserver configuration is the pod's in-cluster one (inCluster); otherwise a
	// short-lived token minted for Options.ServiceAccount (AuthServiceAccount). It never picks the
	// kubeconfig's credentials: those are the user's own, and a kubelet has no business holding
	// them. Over http:// it sends nothing.
	AuthAuto AuthMode = "auto"
	// AuthToken sends the bearer token read from a file, re-read when it changes on disk.
	AuthToken AuthMode = "token"
	// AuthServiceAccount asks the apiserver's TokenRequest API for a 10-minute token of
	// Options.ServiceAccount (kubectl create token), and asks again before it expires.
	AuthServiceAccount AuthMode = "serviceaccount"
	// AuthKubeconfig sends the kubeconfig's own credentials — client certificate, token, basic
	// auth or exec plugin — to every kubelet asked. Only when the user says so.
	AuthKubeconfig AuthMode = "kubeconfig"
	// AuthNone sends no credentials: an anonymous request over HTTPS (TLS still verified), or
	// the read-only port over http://.
	AuthNone AuthMode = "none"
)

// DefaultServiceAccountDir is where a pod finds its ServiceAccount token and the cluster's CA.
const DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// DefaultServiceAccount is the identity examples/rbac creates for reading kubelets.
const DefaultServiceAccount = "kubelet-reader/kubelet-reader"

// ServiceAccountTokenTTL is how long a minted token lives: the shortest the TokenRequest API
// grants (10 minutes).
const ServiceAccountTokenTTL = 10 * time.Minute

// credentials is what New decided to send to kubelets.
type credentials struct {
	mode AuthMode
	// describe says, for the log and for errors, which credentials these are — never a secret.
	describe string
}

// sends says whether the mode puts a secret on the wire.
func (c credentials) sends() bool { return c.mode != AuthNone }

// resolveAuth turns Options.Auth (auto included) into one concrete mode, and configures cfg for
// it. Whether the mode may be used for a given URL (never over http://) is fetch's to check.
func (c *Client) resolveAuth(cfg *rest.Config, apiserver *rest.Config) (credentials, error) {
	o := &c.opts
	saToken := filepath.Join(o.ServiceAccountDir, "token")
	mode := o.Auth
	if mode == "" || mode == AuthAuto {
		switch {
		case o.TokenFile != "":
			mode = AuthToken
		case fileExists(saToken) && inCluster(apiserver, saToken):
			mode, o.TokenFile = AuthToken, saToken
		case apiserver != nil:
			mode = AuthServiceAccount
		case fileExists(saToken):
			return credentials{}, errors.New("no credentials for the kubelet: the pod's ServiceAccount token (" + saToken + ") goes only to its own cluster, " +
				"and there is no in-cluster configuration to say which that is. Give " + o.Names.name("TokenFile") + " to send it anyway, or " + o.Names.set("Auth", "none"))
		default:
			return credentials{}, errors.New("no credentials for the kubelet: give " + o.Names.name("TokenFile") + ", run in a pod with a " +
				"ServiceAccount token, use a kubeconfig (a token is then requested for " + o.ServiceAccount + "), or " + o.Names.set("Auth", "none"))
		}
	}
	switch mode {
	case AuthToken:
		if o.TokenFile == "" {
			o.TokenFile = saToken
		}
		if !fileExists(o.TokenFile) {
			return credentials{}, fmt.Errorf("token file %s does not exist", o.TokenFile)
		}
		cfg.BearerTokenFile = o.TokenFile
		return credentials{mode, "bearer token from " + o.TokenFile}, nil
	case AuthServiceAccount:
		if apiserver == nil {
			return credentials{}, errors.New(o.Names.set("Auth", "serviceaccount") + " asks the apiserver for a token, and needs a kubeconfig")
		}
		namespace, name, err := ParseServiceAccount(o.ServiceAccount)
		if err != nil {
			return credentials{}, fmt.Errorf("%s %w", o.Names.name("ServiceAccount"), err)
		}
		minted, err := newMintedToken(apiserver, namespace, name, o.Timeout, o.Names)
		if err != nil {
			return credentials{}, err
		}
		cfg.Wrap(minted.wrap)
		c.minted = minted
		return credentials{mode, fmt.Sprintf("a %s token of the ServiceAccount %s (TokenRequest)", ServiceAccountTokenTTL, o.ServiceAccount)}, nil
	case AuthKubeconfig:
		if apiserver == nil {
			return credentials{}, errors.New(o.Names.set("Auth", "kubeconfig") + " needs a kubeconfig")
		}
		cfg.Username, cfg.Password = apiserver.Username, apiserver.Password
		cfg.BearerToken, cfg.BearerTokenFile = apiserver.BearerToken, apiserver.BearerTokenFile
		cfg.CertFile, cfg.KeyFile = apiserver.CertFile, apiserver.KeyFile
		cfg.CertData, cfg.KeyData = apiserver.CertData, apiserver.KeyData
		cfg.ExecProvider, cfg.AuthProvider = apiserver.ExecProvider, apiserver.AuthProvider
		return credentials{mode, "the kubeconfig's own credentials (" + o.Names.set("Auth", "kubeconfig") + ")"}, nil
	case AuthNone:
		if o.TokenFile != "" {
			return credentials{}, errors.New(o.Names.set("Auth", "none") + " sends no token: drop " + o.Names.name("TokenFile") + ", or use " + o.Names.set("Auth", "token"))
		}
		return credentials{mode, "none (anonymous)"}, nil
	}
	return credentials{}, fmt.Errorf("unknown %s %q: use auto, token, serviceaccount, kubeconfig or none", o.Names.name("Auth"), mode)
}

// inCluster says whether the apiserver configuration is the pod's own in-cluster one: it
// authenticates with the mounted token itself, as rest.InClusterConfig's does
// (staging/src/k8s.io/client-go/rest/config.go#L546-L577 (func InClusterConfig)). The mounted
// token belongs to that cluster only: with a kubeconfig of another cluster — a CI runner's pod
// of cluster A reading cluster B — it would go to B's kubelets, and doctor would show it to B's
// apiserver.
func inCluster(apiserver *rest.Config, saToken string) bool {
	return apiserver != nil && apiserver.BearerTokenFile != "" && filepath.Clean(apiserver.BearerTokenFile) == filepath.Clean(saToken)
}

// CredentialsConfig is a configuration for the apiserver that carries the credentials the
// kubelet gets, and nothing else: to ask, as that identity, who it is (a SelfSubjectReview) and
// what it may do (SelfSubjectAccessReviews). A token meant for kubelets goes there as to a kubelet:
// over https only, and only to an apiserver whose certificate is checked — the kubeconfig's
// insecure-skip-tls-verify lets its own credentials go to an apiserver it does not check, not a
// token that kubelets accept, which whoever answers there could replay.
func (c *Client) CredentialsConfig() (*rest.Config, error) {
	if c.apiserverREST == nil {
		return nil, errors.New("no kubeconfig: the identity cannot be asked")
	}
	cfg := withTimeout(rest.AnonymousClientConfig(c.apiserverREST), c.opts.Timeout)
	if c.creds.mode == AuthToken || c.creds.mode == AuthServiceAccount {
		server, _, err := rest.DefaultServerUrlFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("the apiserver's URL: %w", err)
		}
		if server.Scheme != "https" {
			return nil, &CredentialsRefusedError{
				Reason: "them to the apiserver over plain " + server.Scheme + "://" + server.Host + " (to ask whose they are)",
				Fix:    "the kubeconfig's server is not https://. Point it at the apiserver's https:// address, not at kubectl proxy's",
			}
		}
		if cfg.Insecure {
			return nil, &CredentialsRefusedError{
				Reason: "them to the apiserver at " + server.Host + " (to ask whose they are), whose certificate is not checked (the kubeconfig's insecure-skip-tls-verify)",
				Fix:    "whoever answers there would get a token that kubelets accept. Give the kubeconfig the cluster's certificate-authority instead of insecure-skip-tls-verify",
			}
		}
	}
	switch c.creds.mode {
	case AuthToken:
		cfg.BearerTokenFile = c.opts.TokenFile
	case AuthServiceAccount:
		token, err := c.minted.get()
		if err != nil {
			return nil, err
		}
		cfg.BearerToken = token
	case AuthKubeconfig:
		cfg = withTimeout(c.apiserverREST, c.opts.Timeout)
	}
	return cfg, nil
}

// ParseServiceAccount reads NAMESPACE/NAME, and checks both as the apiserver would before they
// become a path (/api/v1/namespaces/NAMESPACE/serviceaccounts/NAME/token): a namespace is a
// DNS-1123 label and a ServiceAccount's name a DNS-1123 subdomain
// (staging/src/k8s.io/apimachinery/pkg/api/validation/generic.go#L74 (var ValidateServiceAccountName = NameIsDNSSubdomain)),
// so neither holds "/", "%", ".." or a space, and "../x" or "a/b/c" is refused before any request.
func ParseServiceAccount(s string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(s, "/")
	if !ok || namespace == "" || name == "" {
		return "", "", fmt.Errorf("%s: want NAMESPACE/NAME", strconv.Quote(s))
	}
	if errs := apivalidation.ValidateNamespaceName(namespace, false); len(errs) > 0 {
		return "", "", fmt.Errorf("%s: the namespace %s is not a namespace's name: %s", strconv.Quote(s), strconv.Quote(namespace), strings.Join(errs, "; "))
	}
	if errs := apivalidation.ValidateServiceAccountName(name, false); len(errs) > 0 {
		return "", "", fmt.Errorf("%s: %s is not a ServiceAccount's name: %s", strconv.Quote(s), strconv.Quote(name), strings.Join(errs, "; "))
	}
	return namespace, name, nil
}

// mintedToken holds a ServiceAccount token minted with the TokenRequest API — POST
// .../serviceaccounts/NAME/token, what `kubectl create token` does — and mints another a minute
// before it expires, or after a kubelet answered 401.
//
// The request is made with net/http on client-go's transport (the kubeconfig's credentials,
// TLS, and header logging with the Authorization masked), not through client-go's REST client:
// that one logs response bodies from -v=8, and this response's body is the token. (Its logger
// cannot be silenced per request: component-base turns contextual logging off.)
//
// It follows no redirect: client-go's transport adds the kubeconfig's credentials to every
// request it sends, a redirected one too, and a 307 or 308 would resend the POST to wherever
// the answer says, http:// included.
type mintedToken struct {
	http    *http.Client
	url     string
	account string

	mu     sync.Mutex
	token  string
	expiry time.Time
}

func newMintedToken(apiserver *rest.Config, namespace, name string, timeout time.Duration, names Names) (*mintedToken, error) {
	client, err := rest.HTTPClientFor(apiserver)
	if err != nil {
		return nil, fmt.Errorf("apiserver transport: %w", err)
	}
	client.Timeout = timeout
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base, _, err := rest.DefaultServerUrlFor(apiserver)
	if err != nil {
		return nil, err
	}
	if base.Scheme != "https" {
		// The answer is the token: over http:// it would cross the network in clear.
		return nil, &CredentialsRefusedError{
			Reason: "a TokenRequest for the ServiceAccount " + namespace + "/" + name + " over plain " + base.Scheme + "://" + base.Host + " (its answer, the token, would come back in clear)",
			Fix:    "point the kubeconfig at the apiserver's https:// address, not at kubectl proxy's; or pass " + names.name("TokenFile") + ", or go " + names.set("Via", "apiserver"),
		}
	}
	// namespace and name are checked (ParseServiceAccount): path.Join has nothing to clean.
	base.Path = path.Join(base.Path, "/api/v1/namespaces", namespace, "serviceaccounts", name, "token")
	return &mintedToken{http: client, url: base.String(), account: namespace + "/" + name}, nil
}

func (m *mintedToken) get() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.token != "" && time.Until(m.expiry) > time.Minute {
		return m.token, nil
	}
	token, expiry, err := m.request()
	if err != nil {
		return "", &TokenRequestError{ServiceAccount: m.account, Err: err}
	}
	m.token, m.expiry = token, expiry
	return token, nil
}

func (m *mintedToken) request() (string, time.Time, error) {
	tr := authenticationv1.TokenRequest{
		TypeMeta: metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"},
		Spec:     authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ServiceAccountTokenTTL.Seconds()))},
	}
	body, err := json.Marshal(tr)
	if err != nil {
		return "", time.Time{}, err
	}
	req, err := http.NewRequest(http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := m.http.Do(req)
	if err != nil {
		return "", time.Time{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return "", time.Time{}, fmt.Errorf("the apiserver answered the TokenRequest with %s, a redirect to %s: not followed, the kubeconfig's credentials would go with it",
			resp.Status, Printable(RedactURL(resp.Header.Get("Location")), false))
	}
	data, err := readAtMost(resp.Body, maxTokenResponseBytes, "the TokenRequest's answer")
	if err != nil {
		return "", time.Time{}, err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var status metav1.Status
		if json.Unmarshal(data, &status) == nil && status.Kind == "Status" {
			return "", time.Time{}, apierrors.FromObject(&status)
		}
		return "", time.Time{}, apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodPost,
			corev1.Resource("serviceaccounts/token"), m.account, "", 0, false)
	}
	var out authenticationv1.TokenRequest
	if err := json.Unmarshal(data, &out); err != nil || out.Status.Token == "" {
		return "", time.Time{}, fmt.Errorf("the apiserver's TokenRequest answer holds no token (%v)", err)
	}
	return out.Status.Token, out.Status.ExpirationTimestamp.Time, nil
}

// wrap adds the token to each request. It sits outside client-go's debugging wrapper (which
// logs headers from -v=7), so that wrapper never sees the header at all.
func (m *mintedToken) wrap(rt http.RoundTripper) http.RoundTripper {
	return &wrapper{base: rt, roundTrip: func(req *http.Request) (*http.Response, error) {
		token, err := m.get()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusUnauthorized {
			m.mu.Lock()
			if m.token == token {
				m.token = "" // revoked, or the ServiceAccount recreated: mint again next time
			}
			m.mu.Unlock()
		}
		return resp, err
	}}
}

// TokenRequestError says the apiserver would not mint a token for the ServiceAccount.
type TokenRequestError struct {
	ServiceAccount string
	Err            error
}

func (e *TokenRequestError) Error() string {
	return fmt.Sprintf("could not get a token for the ServiceAccount %s: %v", e.ServiceAccount, e.Err)
}

func (e *TokenRequestError) Unwrap() error { return e.Err }

// CredentialsRefusedError says the client refused to send credentials where they could be read
// or replayed: over plain HTTP, or to a kubelet whose certificate is not checked.
type CredentialsRefusedError struct {
	Reason, Fix string
}

func (e *CredentialsRefusedError) Error() string {
	return "refusing to send " + e.Reason + ": " + e.Fix
}

// guardPlainHTTP is the innermost wrapper of the kubelet transport, below every layer that adds
// credentials: whatever path a request took (a URL, a redirect, userinfo turned into basic auth
// by net/http), a request that carries an Authorization header over anything but https is not
// sent.
func guardPlainHTTP(names Names) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return &wrapper{base: rt, roundTrip: func(req *http.Request) (*http.Response, error) {
			if req.URL.Scheme != "https" && (req.Header.Get("Authorization") != "" || req.URL.User != nil) {
				return nil, &CredentialsRefusedError{Reason: "credentials over plain " + req.URL.Scheme + "://" + req.URL.Host,
					Fix: "use the secure port (https://), or " + names.set("Auth", "none") + " for the read-only port"}
			}
			return rt.RoundTrip(req)
		}}
	}
}

// wrapper is a RoundTripper around base. It says what it wraps (utilnet.RoundTripperWrapper),
// so that client-go can reach net/http's transport to cancel a request that timed out.
type wrapper struct {
	base      http.RoundTripper
	roundTrip func(*http.Request) (*http.Response, error)
}

func (w *wrapper) RoundTrip(req *http.Request) (*http.Response, error) { return w.roundTrip(req) }

func (w *wrapper) WrappedRoundTripper() http.RoundTripper { return w.base }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
