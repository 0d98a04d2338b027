package kubeletclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Via says which way the client takes to the kubelet's API.
type Via string

const (
	ViaPodsAPI   Via = "podsapi"   // the kubelet's local Pods API: a unix socket on the node (podsapi.go)
	ViaKubelet   Via = "kubelet"   // straight to the kubelet, over HTTPS
	ViaAPIServer Via = "apiserver" // through the apiserver's node proxy
	// ViaAuto takes, in this order: the Pods API socket for the client's own node (Options.OwnNode)
	// when it is there and trusted; the kubelet over HTTPS; the proxy only if the kubelet cannot
	// be reached. Each step down is said in the Result (PodsAPISkipped, FellBack).
	ViaAuto Via = "auto"
)

// Options configure a Client.
type Options struct {
	// AddressTypes orders the node address types to try. Default DefaultAddressTypes.
	AddressTypes []corev1.NodeAddressType
	// KubeletPort overrides the port the Node reports (1 to 65535). Default 0: the Node's.
	KubeletPort int
	// TLSServerName is the name the kubelet's certificate is checked against, instead of the
	// address dialed: a node address type ("Hostname") to take it from each Node, or a literal
	// name. The client still dials the address AddressTypes picks.
	TLSServerName string
	// Auth says which credentials kubelets get. Default AuthAuto.
	Auth AuthMode
	// TokenFile is the bearer token for AuthToken (default: the ServiceAccount token).
	TokenFile string
	// ServiceAccount is NAMESPACE/NAME, whose token AuthServiceAccount (and AuthAuto outside a
	// pod) requests. Default DefaultServiceAccount.
	ServiceAccount string
	// ServiceAccountDir is where a pod's token and ca.crt are mounted. Default
	// DefaultServiceAccountDir; tests point it at a directory of their own.
	ServiceAccountDir string
	// KubeletCAFile is the CA that signed the kubelets' serving certificates. Default: the
	// cluster's CA from the kubeconfig, or the pod's ServiceAccount CA.
	KubeletCAFile string
	// InsecureSkipTLSVerify accepts any kubelet certificate: encrypted, but not authenticated.
	InsecureSkipTLSVerify bool
	// AllowCredentialsToUnverifiedKubelet lets credentials go to a kubelet whose certificate is
	// not checked (InsecureSkipTLSVerify). Without it, New refuses that combination.
	AllowCredentialsToUnverifiedKubelet bool
	Via                                 Via
	// PodsAPISocket is the kubelet's Pods API socket (ViaPodsAPI, and ViaAuto on OwnNode).
	// Default DefaultPodsAPISocket.
	PodsAPISocket string
	// OwnNode is the node this client runs on — in a pod, spec.nodeName from the downward API —
	// the only node whose Pods API socket it can reach. Empty: not known, and ViaAuto never
	// tries the socket.
	OwnNode string
	// Timeout bounds each request. Default (0) 10s; New refuses a negative one.
	Timeout time.Duration
	// HTTP1 turns HTTP/2 off, to compare.
	HTTP1 bool
	// MaxResponseBytes bounds what is read of one answer, a kubelet's or the apiserver's (a
	// watch's events are bounded one by one instead); a longer one is an error, never cut.
	// Default DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Names says how the program calls the settings its errors advise changing (a command's
	// flags); without it they are named as Options' fields.
	Names Names
}

// Names says how the program calls the settings its errors advise changing — a command's flags,
// {"TokenFile": "--token-file"} — so that its reader is told what to type. A setting left out is
// named as Options' field ("Options.TokenFile"): what an agent that lifts the package sets.
// "KubeletURL" is the URL FetchURL and GetURL take.
type Names map[string]string

func (n Names) name(setting string) string {
	if name, ok := n[setting]; ok {
		return name
	}
	if setting == "KubeletURL" {
		return "a kubelet URL (FetchURL)"
	}
	return "Options." + setting
}

func (n Names) set(setting, value string) string { return n.name(setting) + "=" + value }

// Client talks to kubelets, and to the apiserver for discovery and the node proxy.
type Client struct {
	opts      Options
	apiserver kubernetes.Interface // nil without a kubeconfig
	nodes     nodeSource           // nil without a kubeconfig
	kubelet   *http.Client         // nil with ViaAPIServer and ViaPodsAPI
	podsAPI   *podsAPI             // with ViaPodsAPI and ViaAuto
	creds     credentials
	minted    *mintedToken // with AuthServiceAccount
	// The configurations behind apiserver and kubelet (KubeletConfig, CredentialsConfig).
	apiserverREST, kubeletREST *rest.Config
	// Credentials says, for the log and the reader, which credentials the kubelet gets.
	Credentials string
	// named maps the host:port a URL names a kubelet by (Options.TLSServerName read from its Node)
	// to the address dialed for it: the transport pools connections by that name.
	named sync.Map
}

// New makes a Client. apiserver may be nil: then only FetchURL works, with a token or nothing.
// New sends nothing anywhere; a ServiceAccount token is requested at the first fetch.
func New(apiserver *rest.Config, opts Options) (*Client, error) {
	if len(opts.AddressTypes) == 0 {
		opts.AddressTypes = DefaultAddressTypes
	}
	// Zero is the default; a negative limit would fail every request at once (or, for the
	// HTTP clients, mean none at all), and a port out of range would fail only at dial time.
	switch {
	case opts.Timeout < 0:
		return nil, fmt.Errorf("request timeout %s: must be more than 0 (0: the default, 10s)", opts.Timeout)
	case opts.KubeletPort < 0 || opts.KubeletPort > 65535:
		return nil, fmt.Errorf("kubelet port %d: a port is 1 to 65535 (0: the port the Node reports)", opts.KubeletPort)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Via == "" {
		opts.Via = ViaAuto
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	explicitServiceAccount := opts.ServiceAccount != ""
	if !explicitServiceAccount {
		opts.ServiceAccount = DefaultServiceAccount
	}
	for _, t := range DefaultAddressTypes {
		if strings.EqualFold(opts.TLSServerName, string(t)) {
			opts.TLSServerName = string(t)
		}
	}
	if opts.ServiceAccountDir == "" {
		opts.ServiceAccountDir = DefaultServiceAccountDir
	}
	switch opts.Via {
	case ViaPodsAPI, ViaKubelet, ViaAPIServer, ViaAuto:
	default:
		return nil, fmt.Errorf("unknown %s %q: use podsapi, kubelet, apiserver or auto", opts.Names.name("Via"), opts.Via)
	}
	if opts.PodsAPISocket == "" {
		opts.PodsAPISocket = DefaultPodsAPISocket
	}
	socket, err := filepath.Abs(opts.PodsAPISocket)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", opts.Names.name("PodsAPISocket"), opts.PodsAPISocket, err)
	}
	opts.PodsAPISocket = socket
	c := &Client{opts: opts, apiserverREST: apiserver}
	if opts.Via == ViaPodsAPI || opts.Via == ViaAuto {
		c.podsAPI = &podsAPI{socket: socket}
	}
	if apiserver != nil {
		cs, err := NewAPIServerClient(withTimeout(apiserver, opts.Timeout), opts.MaxResponseBytes)
		if err != nil {
			return nil, err
		}
		c.apiserver = cs
		c.nodes = &listNodes{client: cs}
	}
	switch opts.Via {
	case ViaAPIServer:
		// The apiserver talks to the kubelet with its own identity: nothing of ours goes there.
		c.Credentials = "none: the apiserver's node proxy uses its own kubelet-client identity"
		return c, nil
	case ViaPodsAPI:
		c.Credentials = PodsAPICredentials
		return c, nil
	}
	cfg, err := c.kubeletConfig(apiserver)
	if err != nil {
		return nil, err
	}
	if explicitServiceAccount && c.creds.mode != AuthServiceAccount {
		return nil, fmt.Errorf("a ServiceAccount (%s) was named, but no token is requested: the credentials are %s", opts.ServiceAccount, c.Credentials)
	}
	c.kubeletREST = cfg
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet transport: %w", err)
	}
	c.kubelet = &http.Client{
		Transport: rt,
		Timeout:   opts.Timeout,
		// A kubelet's /pods never redirects. Following one could carry the token elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// Options are the client's options, defaults filled in.
func (c *Client) Options() Options { return c.opts }

// AuthMode is the credentials the kubelet gets, auto resolved: token, serviceaccount, kubeconfig or none.
func (c *Client) AuthMode() AuthMode { return c.creds.mode }

// APIServer is the client's clientset for the apiserver (nil without a kubeconfig): it follows no
// redirect and bounds what it reads.
func (c *Client) APIServer() kubernetes.Interface { return c.apiserver }

// KubeletConfig is the configuration the client talks to kubelets with — credentials, CA, server
// name — or nil with ViaAPIServer.
func (c *Client) KubeletConfig() *rest.Config { return c.kubeletREST }

// NewAPIServerClient is a clientset for the apiserver that follows no redirect and reads no answer
// past maxBytes (0: DefaultMaxResponseBytes, limitBodies): the client's own, and one for a program
// that reads the node proxy (GET /api/v1/nodes/NAME/proxy/...) with the kubeconfig's credentials.
// The apiserver's node proxy passes a kubelet's redirect on, to another host unchanged
// (staging/src/k8s.io/apimachinery/pkg/util/proxy/transport.go#L113 (resp.Header.Set("Location", t.rewriteURL(targetURL, req.URL, req.Host)))),
// and client-go's transport adds the kubeconfig's credentials to every request it sends, a
// redirected one too: followed, the redirect would carry them wherever the kubelet — or whatever
// answers the apiserver at the node's address — says, http:// included. No request of this
// client to the apiserver expects a redirect.
func NewAPIServerClient(cfg *rest.Config, maxBytes int64) (*kubernetes.Clientset, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResponseBytes
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(limitBodies(maxBytes))
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiserver transport: %w", err)
	}
	httpClient.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return kubernetes.NewForConfigAndClient(cfg, httpClient)
}

func withTimeout(c *rest.Config, timeout time.Duration) *rest.Config {
	c = rest.CopyConfig(c)
	c.Timeout = timeout
	return c
}

// dialAddressKey carries, in a request's context, a dialAddress: the address to dial when the
// URL names the kubelet by the name its certificate holds (Options.TLSServerName).
type dialAddressKey struct{}

// dialAddress replaces a dial to named (the URL's host:port) with one to address. Only that
// dial: with HTTPS_PROXY the transport dials the proxy instead, and sends it CONNECT with the
// proxy's credentials, which must not go in clear to the kubelet's address.
type dialAddress struct{ named, address string }

// kubeletConfig is the rest.Config whose transport talks to kubelets: the chosen credentials,
// and the CA to check the kubelet's certificate against. client-go turns it into a transport
// with HTTP/2, token files re-read as they rotate, and exec plugins.
func (c *Client) kubeletConfig(apiserver *rest.Config) (*rest.Config, error) {
	o := &c.opts
	cfg := &rest.Config{UserAgent: "kubelet-walkthrough-client"}
	// First, so innermost: whatever adds credentials later, this sees the request as it leaves.
	cfg.WrapTransport = guardPlainHTTP(o.Names)
	dialer := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		if override, ok := ctx.Value(dialAddressKey{}).(dialAddress); ok && strings.EqualFold(address, override.named) {
			address = override.address
		}
		return dialer.DialContext(ctx, network, address)
	}
	creds, err := c.resolveAuth(cfg, apiserver)
	if err != nil {
		return nil, err
	}
	c.creds, c.Credentials = creds, creds.describe
	if o.InsecureSkipTLSVerify && o.KubeletCAFile != "" {
		return nil, fmt.Errorf("%s and %s contradict each other: keep one", o.Names.name("KubeletCAFile"), o.Names.name("InsecureSkipTLSVerify"))
	}
	if o.InsecureSkipTLSVerify && creds.sends() && !o.AllowCredentialsToUnverifiedKubelet {
		return nil, &CredentialsRefusedError{
			Reason: creds.describe + " to a kubelet whose certificate is not checked (" + o.Names.name("InsecureSkipTLSVerify") + ")",
			Fix: "whoever answers at that address would get them. Verify instead (" + o.Names.name("KubeletCAFile") + ", " + o.Names.set("TLSServerName", "Hostname") + "), " +
				"go " + o.Names.set("Via", "apiserver") + ", use " + o.Names.set("Auth", "none") + ", or accept the risk with " + o.Names.name("AllowCredentialsToUnverifiedKubelet"),
		}
	}
	if !o.InsecureSkipTLSVerify && o.AllowCredentialsToUnverifiedKubelet {
		return nil, fmt.Errorf("%s only matters with %s: drop it", o.Names.name("AllowCredentialsToUnverifiedKubelet"), o.Names.name("InsecureSkipTLSVerify"))
	}
	saCA := filepath.Join(o.ServiceAccountDir, "ca.crt")
	switch {
	case o.InsecureSkipTLSVerify:
		cfg.Insecure = true
	case o.KubeletCAFile != "":
		cfg.CAFile = o.KubeletCAFile
	case apiserver != nil && (len(apiserver.CAData) > 0 || apiserver.CAFile != ""):
		cfg.CAData, cfg.CAFile = apiserver.CAData, apiserver.CAFile
	case fileExists(saCA):
		cfg.CAFile = saCA
	}
	if o.TLSServerName != "" && !isAddressType(o.TLSServerName) {
		cfg.ServerName = o.TLSServerName
	}
	if o.HTTP1 {
		cfg.NextProtos = []string{"http/1.1"}
	}
	return cfg, nil
}

// Result is what one node's kubelet answered.
type Result struct {
	Node string
	Pods []corev1.Pod
	// Via is "podsapi", "kubelet" or "apiserver"; URL is what was asked (unix:// and the socket
	// for the Pods API), with any userinfo redacted.
	Via, URL string
	// ServerName is the name the kubelet's certificate was checked against, when not the
	// URL's host (Options.TLSServerName).
	ServerName string
	// Protocol is the HTTP version the kubelet answered with ("HTTP/2.0").
	Protocol string
	// Body is the answer as the kubelet sent it.
	Body []byte
	// PodsAPISkipped holds why ViaAuto did not read the Pods API socket although the node asked
	// is the client's own (Options.OwnNode): absent, refused, or it failed.
	PodsAPISkipped error
	// FellBack holds why the kubelet could not be reached, when the proxy answered instead.
	FellBack error
	Err      error
}

// Node reads one Node from the apiserver (or from the informer, once WatchNodes runs).
func (c *Client) Node(ctx context.Context, name string) (*corev1.Node, error) {
	if c.nodes == nil {
		return nil, fmt.Errorf("finding a node's kubelet needs a kubeconfig (or %s)", c.opts.Names.name("KubeletURL"))
	}
	n, err := c.nodes.get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read node %s: %w", name, err)
	}
	return n, nil
}

// Nodes lists the Nodes (one LIST, or none once WatchNodes runs).
func (c *Client) Nodes(ctx context.Context) ([]corev1.Node, error) {
	if c.nodes == nil {
		return nil, errors.New("listing nodes needs a kubeconfig")
	}
	return c.nodes.list(ctx)
}

// Endpoint finds a node's kubelet through the apiserver.
func (c *Client) Endpoint(ctx context.Context, node string) (Endpoint, error) {
	n, err := c.Node(ctx, node)
	if err != nil {
		return Endpoint{}, err
	}
	return c.EndpointOf(n)
}

// EndpointOf is where the client dials a Node already read: EndpointFor with the client's
// address types and port, and the name its certificate is checked for (Options.TLSServerName).
func (c *Client) EndpointOf(n *corev1.Node) (Endpoint, error) {
	e, err := EndpointFor(n, c.opts.AddressTypes, c.opts.KubeletPort)
	var noAddress *NoAddressError
	if errors.As(err, &noAddress) {
		noAddress.Setting = c.opts.Names.name("AddressTypes")
	}
	if e.PortFrom == portGiven {
		e.PortFrom = c.opts.Names.name("KubeletPort")
	}
	if err != nil || c.opts.TLSServerName == "" {
		return e, err
	}
	if !isAddressType(c.opts.TLSServerName) {
		e.ServerName = c.opts.TLSServerName
		return e, nil
	}
	for _, a := range n.Status.Addresses {
		if string(a.Type) == c.opts.TLSServerName && a.Address != "" {
			e.ServerName = a.Address
			return e, nil
		}
	}
	return e, fmt.Errorf("node %s has no %s address to check its kubelet's certificate against (%s)", n.Name, c.opts.TLSServerName, c.opts.Names.name("TLSServerName"))
}

// Endpoint is one of the kubelet's read endpoints, and the narrow permission it needs: the
// kubelet asks for nodes/SUBRESOURCE first and nodes/proxy only if that is denied
// (pkg/kubelet/server/auth.go#L83-L157 (func (n nodeAuthorizerAttributesGetter) GetRequestAttributes)).
type ReadEndpoint struct {
	Path       string // under the kubelet's root, without the leading slash
	Permission string // what to grant, narrowest first
	// Pods says the answer is a PodList.
	Pods bool
}

// ReadEndpoints are the kubelet's read endpoints an agent needs, by name.
var ReadEndpoints = map[string]ReadEndpoint{
	"pods":             {"pods", "get nodes/pods", true},
	"runningpods":      {"runningpods/", "get nodes/pods", true},
	"stats/summary":    {"stats/summary", "get nodes/stats", false},
	"metrics/resource": {"metrics/resource", "get nodes/metrics", false},
	"configz":          {"configz", "get nodes/configz", false},
	"healthz":          {"healthz", "get nodes/healthz", false},
}

var podsEndpoint = ReadEndpoints["pods"]

// Pods fetches one node's pods, by the way Options.Via says.
func (c *Client) Pods(ctx context.Context, node string) Result {
	return c.Get(ctx, node, podsEndpoint)
}

// Get fetches one of a node's read endpoints, by the way Options.Via says. The answer is in
// Result.Body (and decoded into Result.Pods for the pod lists). The Pods API socket answers
// for the client's own node only, and serves pods only: ViaAuto asks it for those, first.
func (c *Client) Get(ctx context.Context, node string, ep ReadEndpoint) Result {
	use, skipped := c.PodsAPIFor(node)
	if use && (c.opts.Via == ViaPodsAPI || ep == podsEndpoint) {
		r := c.viaPodsAPI(ctx, node, ep)
		if r.Err == nil || c.opts.Via == ViaPodsAPI || ctx.Err() != nil {
			return r
		}
		klog.FromContext(ctx).V(1).Info("The Pods API failed, asking the kubelet over HTTPS", "node", node, "err", r.Err)
		skipped = r.Err
	}
	var r Result
	if c.opts.Via == ViaAPIServer {
		r = c.viaProxy(ctx, node, ep)
	} else if n, err := c.Node(ctx, node); err != nil {
		r = Result{Node: node, Err: err}
	} else {
		r = c.GetOf(ctx, n, ep)
	}
	r.PodsAPISkipped = skipped
	return r
}

// GetOf fetches an endpoint of a Node already read, over HTTPS or through the node proxy (a
// Node read is another node's, or one for which the socket was not taken: ViaAuto goes on to
// HTTPS): no request to the apiserver unless the kubelet cannot be reached and Via is auto.
func (c *Client) GetOf(ctx context.Context, n *corev1.Node, ep ReadEndpoint) Result {
	switch c.opts.Via {
	case ViaAPIServer:
		return c.viaProxy(ctx, n.Name, ep)
	case ViaPodsAPI:
		return c.viaPodsAPI(ctx, n.Name, ep)
	}
	e, err := c.EndpointOf(n)
	var noAddress *NoAddressError
	if c.opts.Via == ViaAuto && errors.As(err, &noAddress) {
		// No address of the preferred types: the apiserver has its own order, let it try.
		proxied := c.viaProxy(ctx, n.Name, ep)
		proxied.FellBack = err
		return proxied
	}
	if err != nil {
		return Result{Node: n.Name, Err: err}
	}
	r := c.fetch(ctx, e.URL(), ep, e.ServerName)
	r.Node = n.Name
	var rerr *RequestError
	if errors.As(r.Err, &rerr) {
		rerr.Node = n.Name
	}
	if c.opts.Via == ViaAuto && rerr != nil && rerr.Unreachable() && ctx.Err() == nil {
		klog.FromContext(ctx).V(1).Info("Kubelet unreachable, asking the apiserver's node proxy", "node", n.Name, "err", r.Err)
		proxied := c.viaProxy(ctx, n.Name, ep)
		proxied.FellBack = r.Err
		return proxied
	}
	return r
}

// FetchURL asks one kubelet, at rawURL (https://host:port, or http:// for the read-only port),
// for its pods.
func (c *Client) FetchURL(ctx context.Context, rawURL string) Result {
	return c.fetch(ctx, rawURL, podsEndpoint, "")
}

// GetURL asks one kubelet, at rawURL, for one of its read endpoints.
func (c *Client) GetURL(ctx context.Context, rawURL string, ep ReadEndpoint) Result {
	return c.fetch(ctx, rawURL, ep, "")
}

// fetch asks the kubelet at base for ep. With serverName, TLS checks the kubelet's certificate
// against that name. A literal name (Options.TLSServerName) is the transport's, for every node;
// a name read from each Node (an address type) goes into the URL, and the dialer connects to
// base's address. Such a URL names its connection in the transport's pool, which is keyed by
// the URL's host: one name for two addresses would have the second node's request reuse the
// first node's connection, and report its pods under the wrong node — refused instead.
func (c *Client) fetch(ctx context.Context, base string, ep ReadEndpoint, serverName string) Result {
	target := strings.TrimSuffix(base, "/") + "/" + ep.Path
	r := Result{Via: "kubelet", URL: RedactURL(target)}
	if c.kubelet == nil {
		r.Err = fmt.Errorf("this client asks no kubelet over HTTPS (%s)", c.opts.Names.set("Via", string(c.opts.Via)))
		return r
	}
	u, err := url.Parse(target)
	switch {
	case err != nil && r.URL != target:
		// net/url's error quotes the URL, user info and all.
		r.Err = fmt.Errorf("the kubelet URL %s is not a valid URL, and holds credentials (user info): the kubelet takes none that way; use %s", RedactURL(base), c.opts.Names.name("TokenFile"))
		return r
	case err != nil:
		r.Err = fmt.Errorf("kubelet URL %s: %w", base, err)
		return r
	case u.User != nil, r.URL != target:
		r.Err = fmt.Errorf("the kubelet URL %s holds credentials (user info): the kubelet takes none that way; use %s", r.URL, c.opts.Names.name("TokenFile"))
		return r
	case u.Scheme == "http" && c.creds.sends():
		r.Err = &CredentialsRefusedError{Reason: c.creds.describe + " over plain http://" + u.Host,
			Fix: "anyone on the path could read and replay it. http:// is the read-only port, which takes no credentials: add " + c.opts.Names.set("Auth", "none") + "; " +
				"for the secure port use https:// (usually port 10250)"}
		return r
	case u.Scheme != "http" && u.Scheme != "https":
		r.Err = fmt.Errorf("kubelet URL %s: the scheme must be https:// (or http:// for the read-only port)", r.URL)
		return r
	}
	if serverName != "" {
		r.ServerName = serverName
	}
	if serverName != "" && c.kubeletREST.ServerName == "" {
		dialed := u.Host
		u.Host = net.JoinHostPort(serverName, u.Port())
		if other, taken := c.named.LoadOrStore(strings.ToLower(u.Host), dialed); taken && other.(string) != dialed {
			r.Err = fmt.Errorf("the kubelet at %s and the one at %s both give %s as their %s: one name cannot stand for two connections. "+
				"Check their certificates against another address type, or a literal name (%s)", dialed, other, serverName, c.opts.TLSServerName, c.opts.Names.name("TLSServerName"))
			return r
		}
		ctx = context.WithValue(ctx, dialAddressKey{}, dialAddress{named: u.Host, address: dialed})
	}
	// Whether TCP connected tells a kubelet that is slow from one that cannot be reached.
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				connected.Store(true)
			}
		},
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		r.Err = err
		return r
	}
	failed := func(err error, connected bool) *RequestError {
		return &RequestError{URL: r.URL, ServerName: serverName, Err: err, Connected: connected, Timeout: c.opts.Timeout,
			Credentials: c.Credentials, Permission: ep.Permission}
	}
	resp, err := c.kubelet.Do(req)
	if err != nil {
		r.Err = failed(checkedFor(err, r.URL, serverName), connected.Load())
		return r
	}
	defer func() { _ = resp.Body.Close() }()
	r.Protocol = resp.Proto
	klog.FromContext(ctx).V(2).Info("Kubelet answered", "url", r.URL, "status", resp.StatusCode, "protocol", resp.Proto, "credentials", c.Credentials)
	if resp.StatusCode != http.StatusOK {
		text, unread, err := readErrorBody(resp.Body)
		if err != nil {
			r.Err = failed(err, true)
			return r
		}
		e := failed(fmt.Errorf("GET %s: %d %s: %s", r.URL, resp.StatusCode, http.StatusText(resp.StatusCode), shownBody(text, unread)), true)
		e.StatusCode, e.Location, e.Body = resp.StatusCode, resp.Header.Get("Location"), text
		r.Err = e
		return r
	}
	body, err := readAtMost(resp.Body, c.opts.MaxResponseBytes, "the kubelet's answer to GET "+r.URL)
	if err != nil {
		r.Err = failed(err, true)
		return r
	}
	r.Body = body
	if ep.Pods {
		r.Pods, r.Err = decodePods(body)
	}
	return r
}

// serverNameError is the error of a request whose URL named the kubelet by the name its
// certificate is checked for while the dialer connected to the address (fetch): it shows the
// URL dialed, and the name checked.
type serverNameError struct {
	dialed     *url.Error
	serverName string
}

func (e *serverNameError) Error() string {
	return fmt.Sprintf("%s %q (certificate checked for %s): %v", e.dialed.Op, e.dialed.URL, e.serverName, e.dialed.Err)
}

// Unwrap keeps net/http's error in the chain, so that Unreachable and callers classify it.
func (e *serverNameError) Unwrap() error { return e.dialed }

// checkedFor rewrites net/http's error for a request sent to serverName but dialed at dialed:
// without it the reader would read a URL that names a host nobody dialed ("https://minikube:10250/pods").
func checkedFor(err error, dialed, serverName string) error {
	var ue *url.Error
	if serverName == "" || !errors.As(err, &ue) {
		return err
	}
	return &serverNameError{dialed: &url.Error{Op: ue.Op, URL: dialed, Err: ue.Err}, serverName: serverName}
}

// viaProxy asks the apiserver to fetch a node's endpoint: GET /api/v1/nodes/NAME/proxy/PATH.
func (c *Client) viaProxy(ctx context.Context, node string, ep ReadEndpoint) Result {
	r := Result{Node: node, Via: "apiserver", URL: "/api/v1/nodes/" + node + "/proxy/" + ep.Path}
	if c.apiserver == nil {
		r.Err = errors.New("the apiserver's node proxy needs a kubeconfig")
		return r
	}
	res := c.apiserver.CoreV1().RESTClient().Get().AbsPath(r.URL).Do(ctx)
	body, err := res.Raw()
	if err != nil {
		// res.Error, not Raw's error: it decodes a JSON Status.
		r.Err = &RequestError{Node: node, URL: r.URL, Proxy: true, Err: res.Error(), Timeout: c.opts.Timeout, Permission: ep.Permission}
		return r
	}
	r.Body = body
	if ep.Pods {
		r.Pods, r.Err = decodePods(body)
	}
	return r
}

func decodePods(body []byte) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode the PodList: %w", err)
	}
	return list.Items, nil
}

// RequestError is a request to a kubelet, or to the apiserver's node proxy, that failed: what the
// client saw, for the caller to act on (Unreachable: the failover) or to explain (the production
// client's agent package turns it into what to do).
type RequestError struct {
	Node string
	// URL is what was asked; ServerName, when set, the name the kubelet's certificate was checked
	// for instead of the URL's host (Options.TLSServerName).
	URL, ServerName string
	// Err is what failed: the transport's error, the apiserver's (Proxy), or the kubelet's status
	// line with its body quoted (StatusCode).
	Err error
	// Proxy says the request went through the apiserver's node proxy.
	Proxy bool
	// Connected says TCP connected: the kubelet (or something at its address) was reached.
	Connected bool
	// Timeout is the limit that applied (Options.Timeout).
	Timeout time.Duration
	// StatusCode, Location and Body are the kubelet's answer when it was not 200 (Body as read:
	// at most 64 KiB).
	StatusCode     int
	Location, Body string
	// Credentials says what the kubelet was sent (Client.Credentials); Permission what the
	// endpoint asked for needs ("get nodes/pods", ReadEndpoint.Permission).
	Credentials, Permission string
}

func (e *RequestError) Error() string { return e.Err.Error() }

func (e *RequestError) Unwrap() error { return e.Err }

// Unreachable says the kubelet could not be reached at all: nothing listens (connection
// refused), no TCP connection in time, no route or no such name. It is the only case in which
// the client falls back to the apiserver's node proxy. A kubelet that accepted the connection was
// reached: if it answered 401, 403, with a certificate the client does not trust, or not in time,
// the proxy would hide the problem (or meet the same slowness). Credentials the client could not
// get or would not send are no network failure either.
func (e *RequestError) Unreachable() bool {
	var refused *CredentialsRefusedError
	var noToken *TokenRequestError
	if e.Proxy || e.Connected || e.StatusCode != 0 || errors.As(e.Err, &refused) || errors.As(e.Err, &noToken) {
		return false
	}
	var dnsErr *net.DNSError
	var dialErr *net.OpError
	var netErr net.Error
	return errors.Is(e.Err, syscall.ECONNREFUSED) || errors.Is(e.Err, os.ErrDeadlineExceeded) || (errors.As(e.Err, &netErr) && netErr.Timeout()) ||
		errors.As(e.Err, &dnsErr) || (errors.As(e.Err, &dialErr) && dialErr.Op == "dial")
}

// RedactURL hides a URL's user info (user name and password alike: either may be a secret),
// however the URL is written. What net/url cannot read as a URL with a host — it fails on a
// password holding "/", "#", a quote or a space, and reads "user:password@host" as the scheme
// "user" — loses everything up to its last "@".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err == nil && u.User != nil:
		u.User = url.User("xxxxx")
		return u.String()
	case !strings.Contains(raw, "@"), err == nil && u.Opaque == "" && !strings.Contains(u.Host, "@"):
		return raw // no "@", or only in the path, query or fragment of a URL with a host
	}
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(raw, "@")
	if at < start {
		start = 0
	}
	return raw[:start] + "xxxxx" + raw[at:]
}
