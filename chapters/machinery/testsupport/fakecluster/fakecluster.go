// Package fakecluster is test support for chapter 11: a fake apiserver and fake kubelets on
// loopback that record what actually reaches them — each request's Authorization header and
// TLS client certificate — so that tests of the client check the wire, not the code path.
//
// The fakes answer only what the client asks: Nodes (GET and LIST), TokenRequest, the node
// proxy, CertificateSigningRequests (LIST), and /pods. Tests of behaviour against real kubelets live in ../e2e.
package fakecluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/pki"
)

// Request is what one request brought to a fake server.
type Request struct {
	Method, Path, Query string
	// Authorization is the header as received ("Bearer …", "Basic …", or empty).
	Authorization string
	// ClientCert is the common name of the TLS client certificate presented, or empty.
	ClientCert string
	TLS        bool
	Body       []byte
	// ExpirationSeconds is what a TokenRequest asked for (client-go sends it as protobuf).
	ExpirationSeconds int64
}

// Recorder keeps the requests a server received, how many were in flight at most, and how
// many its clients gave up on before it answered.
type Recorder struct {
	mu                    sync.Mutex
	requests              []Request
	inFlight, maxInFlight int
	abandoned             int
}

func (r *Recorder) begin(req *http.Request) (Request, func()) {
	body, _ := io.ReadAll(req.Body)
	rec := Request{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, Authorization: req.Header.Get("Authorization"), TLS: req.TLS != nil, Body: body}
	if obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil); err == nil {
		if tr, ok := obj.(*authenticationv1.TokenRequest); ok && tr.Spec.ExpirationSeconds != nil {
			rec.ExpirationSeconds = *tr.Spec.ExpirationSeconds
		}
	}
	if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
		rec.ClientCert = req.TLS.PeerCertificates[0].Subject.CommonName
	}
	r.mu.Lock()
	r.requests = append(r.requests, rec)
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	r.mu.Unlock()
	return rec, func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}
}

// Requests returns the requests received so far.
func (r *Recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// MaxInFlight is the most requests that were being served at once.
func (r *Recorder) MaxInFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxInFlight
}

// Abandoned is how many requests the client gave up on (closed, or cancelled) before the
// server answered: the order of two events, which a test can check without a clock.
func (r *Recorder) Abandoned() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.abandoned
}

func (r *Recorder) abandon() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned++
}

// Reset forgets the requests received so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests, r.maxInFlight, r.abandoned = nil, 0, 0
}

// PKI is the CA that signs the fakes' serving certificates and the clients' certificates.
type PKI struct {
	CA     *pki.CA
	CAFile string
	dir    string
}

// NewPKI makes a CA in a temporary directory.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	ca, err := pki.NewCA("fakecluster-ca")
	must(t, err)
	dir := t.TempDir()
	caFile, err := ca.WriteCA(dir, "ca")
	must(t, err)
	return &PKI{CA: ca, CAFile: caFile, dir: dir}
}

// ServingConfig is a TLS configuration with a certificate for the given names (IP addresses
// or DNS names) that asks for, but does not require, a client certificate.
func (p *PKI) ServingConfig(t testing.TB, names ...string) *tls.Config {
	t.Helper()
	req := pki.Request{CommonName: names[0], Server: true}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			req.IPs = append(req.IPs, ip)
		} else {
			req.DNSNames = append(req.DNSNames, n)
		}
	}
	pair, err := p.CA.Issue(req)
	must(t, err)
	cert, err := pair.TLSCertificate()
	must(t, err)
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
}

// ClientCert issues a client certificate and writes it, returning the files.
func (p *PKI) ClientCert(t testing.TB, commonName string) (certFile, keyFile string) {
	t.Helper()
	pair, err := p.CA.Issue(pki.Request{CommonName: commonName, Client: true})
	must(t, err)
	certFile, keyFile, err = pair.Write(p.dir, commonName)
	must(t, err)
	return certFile, keyFile
}

// Kubelet is a fake kubelet serving /pods.
type Kubelet struct {
	*Recorder
	Server *httptest.Server
	// URL is https://127.0.0.1:PORT (or http:// for a plain one).
	URL  string
	Port int

	mu      sync.Mutex
	pods    []corev1.Pod
	delay   time.Duration
	hold    func(context.Context)
	status  int
	body    string
	headers map[string]string
}

// KubeletOptions shape a fake kubelet.
type KubeletOptions struct {
	// TLS serves HTTPS with this configuration; nil serves plain HTTP (the read-only port).
	TLS *tls.Config
	// Pods are served on /pods.
	Pods []corev1.Pod
	// Address is the host:port to listen on; default 127.0.0.1 and a free port. Kubelets of
	// several nodes listen on one port at different addresses (127.0.0.2:P, 127.0.0.3:P).
	Address string
}

// NoServingCertificate is a TLS configuration with no certificate, whose GetCertificate fails as
// the kubelet's does while its serving CSR waits for approval
// (pkg/kubelet/kubelet.go#L962-L968 (kubeDeps.TLSConfig.GetCertificate)): crypto/tls then ends
// every handshake with the alert internal_error. (Through GetConfigForClient, because
// httptest adds a certificate of its own to a configuration that has none.)
func NoServingCertificate() *tls.Config {
	none := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return nil, errors.New("no serving certificate available for the kubelet")
	}}
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return none, nil }}
}

// NewKubelet starts a fake kubelet; the test's cleanup stops it.
func NewKubelet(t testing.TB, opts KubeletOptions) *Kubelet {
	t.Helper()
	k := &Kubelet{Recorder: &Recorder{}, pods: opts.Pods}
	k.Server = httptest.NewUnstartedServer(http.HandlerFunc(k.serve))
	k.Server.Config.ErrorLog = quiet // refused handshakes are what some tests are about
	if opts.Address != "" {
		l, err := net.Listen("tcp", opts.Address)
		must(t, err)
		_ = k.Server.Listener.Close()
		k.Server.Listener = l
	}
	if opts.TLS != nil {
		k.Server.TLS = opts.TLS
		k.Server.StartTLS()
	} else {
		k.Server.Start()
	}
	t.Cleanup(k.Server.Close)
	k.URL = k.Server.URL
	k.Port = k.Server.Listener.Addr().(*net.TCPAddr).Port
	return k
}

// SetPods replaces the pods served on /pods.
func (k *Kubelet) SetPods(pods ...corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods = pods
}

// Answer makes the kubelet answer /pods with status and a plain-text body (as the kubelet
// writes its errors), after delay.
func (k *Kubelet) Answer(status int, body string, delay time.Duration, headers map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status, k.body, k.delay, k.headers = status, body, delay, headers
}

// Hold makes the kubelet call hold, with the request's context, before it answers (after
// Answer's delay): a test keeps requests in flight until what it waits for has happened, with
// no clock involved. nil answers at once again.
func (k *Kubelet) Hold(hold func(ctx context.Context)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hold = hold
}

func (k *Kubelet) serve(w http.ResponseWriter, req *http.Request) {
	_, done := k.begin(req)
	defer done()
	k.mu.Lock()
	status, body, delay, hold, pods, headers := k.status, k.body, k.delay, k.hold, k.pods, k.headers
	k.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-req.Context().Done():
		k.abandon()
		return
	}
	if hold != nil {
		hold(req.Context())
		if req.Context().Err() != nil {
			k.abandon()
			return
		}
	}
	for name, value := range headers {
		w.Header().Set(name, value)
	}
	if status != 0 && status != http.StatusOK {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
		return
	}
	switch req.URL.Path {
	case "/pods":
	case "/healthz":
		_, _ = io.WriteString(w, "ok")
		return
	case "/configz":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kubeletconfig":{"port":10250}}`)
		return
	default:
		http.NotFound(w, req)
		return
	}
	list := corev1.PodList{Items: pods}
	list.Kind, list.APIVersion = "PodList", "v1"
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// APIServer is a fake kube-apiserver: Nodes, TokenRequest and the node proxy.
type APIServer struct {
	*Recorder
	Server *httptest.Server

	mu    sync.Mutex
	nodes []corev1.Node
	// tokens minted, by "namespace/name"; a ServiceAccount not in the map does not exist.
	serviceAccounts map[string]string
	proxy           http.HandlerFunc
	// users maps bearer tokens to user names, for SelfSubjectReview; allow lists what each
	// user may do, as "get nodes/pods", for SelfSubjectAccessReview.
	users map[string]string
	allow map[string][]string
	csrs  []certificatesv1.CertificateSigningRequest
}

// NewAPIServer starts a fake apiserver with TLS from p; the test's cleanup stops it.
func NewAPIServer(t testing.TB, p *PKI) *APIServer {
	t.Helper()
	a := &APIServer{Recorder: &Recorder{}, serviceAccounts: map[string]string{}, users: map[string]string{}, allow: map[string][]string{}}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.Server.Config.ErrorLog = quiet
	a.Server.TLS = p.ServingConfig(t, "127.0.0.1")
	a.Server.StartTLS()
	t.Cleanup(a.Server.Close)
	return a
}

// SetNodes replaces the Nodes the apiserver knows.
func (a *APIServer) SetNodes(nodes ...corev1.Node) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nodes = nodes
}

// ServiceAccount makes a ServiceAccount exist, whose TokenRequests return token.
func (a *APIServer) ServiceAccount(namespaceName, token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.serviceAccounts[namespaceName] = token
}

// User makes a bearer token authenticate as user, allowed the given "verb resource/subresource".
func (a *APIServer) User(token, user string, allow ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.users[token], a.allow[user] = user, allow
}

// SetCSRs replaces the CertificateSigningRequests the apiserver lists.
func (a *APIServer) SetCSRs(csrs ...certificatesv1.CertificateSigningRequest) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.csrs = csrs
}

// Proxy sets the handler of /api/v1/nodes/NAME/proxy/...
func (a *APIServer) Proxy(h http.HandlerFunc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.proxy = h
}

// Node is a Node whose kubelet listens on 127.0.0.1:port, as the kubelet reports itself.
func Node(name string, port int, extra ...corev1.NodeAddress) corev1.Node {
	n := corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Addresses = append([]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}, extra...)
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	return n
}

func (a *APIServer) serve(w http.ResponseWriter, req *http.Request) {
	rec, done := a.begin(req)
	defer done()
	a.mu.Lock()
	nodes, proxy := a.nodes, a.proxy
	a.mu.Unlock()
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case req.URL.Path == "/api/v1/nodes" && req.URL.Query().Get("watch") == "true":
		a.watchNodes(w, req, nodes)
	case req.URL.Path == "/api/v1/nodes" && req.Method == http.MethodGet:
		list := corev1.NodeList{Items: nodes}
		list.Kind, list.APIVersion, list.ResourceVersion = "NodeList", "v1", "1"
		writeJSON(w, http.StatusOK, list)
	case len(parts) == 4 && parts[2] == "nodes" && req.Method == http.MethodGet:
		for _, n := range nodes {
			if n.Name == parts[3] {
				writeJSON(w, http.StatusOK, n)
				return
			}
		}
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, `nodes "`+parts[3]+`" not found`)
	case len(parts) >= 6 && parts[2] == "nodes" && parts[4] == "proxy":
		if proxy == nil {
			writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "no proxy in this fake")
			return
		}
		proxy(w, req)
	case len(parts) == 7 && parts[4] == "serviceaccounts" && parts[6] == "token" && req.Method == http.MethodPost:
		a.mu.Lock()
		token, ok := a.serviceAccounts[parts[3]+"/"+parts[5]]
		a.mu.Unlock()
		if !ok {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, `serviceaccounts "`+parts[5]+`" not found`)
			return
		}
		tr := authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"}}
		tr.Status.Token = token
		tr.Status.ExpirationTimestamp = metav1.NewTime(time.Now().Add(10 * time.Minute))
		writeJSON(w, http.StatusCreated, tr)
	case req.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews":
		user, ok := a.user(req)
		if !ok {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
			return
		}
		review := authenticationv1.SelfSubjectReview{TypeMeta: metav1.TypeMeta{Kind: "SelfSubjectReview", APIVersion: "authentication.k8s.io/v1"}}
		review.Status.UserInfo = authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}}
		writeJSON(w, http.StatusCreated, review)
	case req.URL.Path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
		user, ok := a.user(req)
		if !ok {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
			return
		}
		review := &authorizationv1.SelfSubjectAccessReview{}
		if obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(rec.Body, nil, nil); err == nil {
			if r, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
				review = r
			}
		}
		if ra := review.Spec.ResourceAttributes; ra != nil {
			a.mu.Lock()
			review.Status.Allowed = slices.Contains(a.allow[user], ra.Verb+" "+ra.Resource+"/"+ra.Subresource)
			a.mu.Unlock()
		}
		review.TypeMeta = metav1.TypeMeta{Kind: "SelfSubjectAccessReview", APIVersion: "authorization.k8s.io/v1"}
		writeJSON(w, http.StatusCreated, review)
	case req.URL.Path == "/apis/certificates.k8s.io/v1/certificatesigningrequests":
		a.mu.Lock()
		list := certificatesv1.CertificateSigningRequestList{Items: append([]certificatesv1.CertificateSigningRequest{}, a.csrs...)}
		a.mu.Unlock()
		list.Kind, list.APIVersion = "CertificateSigningRequestList", "certificates.k8s.io/v1"
		writeJSON(w, http.StatusOK, list)
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the fake apiserver does not serve "+req.URL.Path)
	}
}

// watchNodes is a watch that never changes: with sendInitialEvents (client-go's watch-list),
// the Nodes as ADDED events and the bookmark that ends them; then nothing until the client
// goes away.
func (a *APIServer) watchNodes(w http.ResponseWriter, req *http.Request, nodes []corev1.Node) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	if req.URL.Query().Get("sendInitialEvents") == "true" {
		for _, n := range nodes {
			n.ResourceVersion = "1"
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": n})
		}
		bookmark := corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
		_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": bookmark})
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	<-req.Context().Done()
}

func (a *APIServer) user(req *http.Request) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	user, ok := a.users[strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")]
	return user, ok
}

var quiet = log.New(io.Discard, "", 0)

func writeJSON(w http.ResponseWriter, code int, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

// WriteStatus answers as the apiserver answers its own errors: a JSON Status.
func WriteStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	writeStatus(w, code, reason, message)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	writeJSON(w, code, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: message})
}

// User is how a kubeconfig's user authenticates.
type User struct {
	Token string
	// TokenFile is read as the token, as an in-cluster configuration reads the pod's.
	TokenFile          string
	Username, Password string
	CertFile, KeyFile  string
}

// Kubeconfig writes a kubeconfig for the fake apiserver, trusting p's CA, with the context
// "fake", and returns its path.
func (a *APIServer) Kubeconfig(t testing.TB, p *PKI, user User) string {
	t.Helper()
	var u strings.Builder
	u.WriteString("  user:\n")
	if user.Token != "" {
		u.WriteString("    token: " + user.Token + "\n")
	}
	if user.TokenFile != "" {
		u.WriteString("    tokenFile: " + user.TokenFile + "\n")
	}
	if user.Username != "" {
		u.WriteString("    username: " + user.Username + "\n    password: " + user.Password + "\n")
	}
	if user.CertFile != "" {
		u.WriteString("    client-certificate: " + user.CertFile + "\n    client-key: " + user.KeyFile + "\n")
	}
	if u.Len() == len("  user:\n") {
		u.WriteString("    {}\n")
	}
	config := "apiVersion: v1\nkind: Config\ncurrent-context: fake\n" +
		"clusters:\n- name: fake\n  cluster:\n    server: " + a.Server.URL + "\n    certificate-authority: " + p.CAFile + "\n" +
		"contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n" +
		"users:\n- name: fake\n" + u.String()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(path, []byte(config), 0o600))
	return path
}

// TokenFile writes a token to a file and returns its path.
func TokenFile(t testing.TB, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(path, []byte(token), 0o600))
	return path
}

// ServiceAccountDir is a pod's /var/run/secrets/kubernetes.io/serviceaccount in a temporary
// directory: token (if not empty) and ca.crt (if caFile is not empty).
func ServiceAccountDir(t testing.TB, token, caFile string) string {
	t.Helper()
	dir := t.TempDir()
	if token != "" {
		must(t, os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600))
	}
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, "ca.crt"), data, 0o644))
	}
	return dir
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
