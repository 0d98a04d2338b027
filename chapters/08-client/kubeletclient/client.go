package kubeletclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// AuthMode says how the client proves who it is to the kubelet.
type AuthMode string

const (
	// AuthAuto uses --token-file if given, else the pod's ServiceAccount token if there is one,
	// else the kubeconfig's credentials.
	AuthAuto AuthMode = "auto"
	// AuthToken sends the bearer token read from a file, re-read when it changes on disk.
	AuthToken AuthMode = "token"
	// AuthKubeconfig uses the kubeconfig's credentials: client certificate, token or exec plugin.
	AuthKubeconfig AuthMode = "kubeconfig"
	// AuthNone sends nothing, over plain HTTP: the read-only port (10255), if enabled.
	AuthNone AuthMode = "none"
)

// Via says which way the client takes to the kubelet's API.
type Via string

const (
	ViaKubelet   Via = "kubelet"   // straight to the kubelet
	ViaAPIServer Via = "apiserver" // through the apiserver's node proxy
	ViaAuto      Via = "auto"      // the kubelet, and the proxy only if the kubelet cannot be reached
)

// Where a pod finds its ServiceAccount token and the cluster's CA.
const (
	ServiceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	ServiceAccountCAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// ReadOnlyPort is the kubelet's unauthenticated port, disabled unless configured.
const ReadOnlyPort = 10255

// Options configure a Client.
type Options struct {
	// AddressTypes orders the node address types to try. Default DefaultAddressTypes.
	AddressTypes []corev1.NodeAddressType
	// KubeletPort overrides the port the Node reports.
	KubeletPort int
	Auth        AuthMode
	// TokenFile is the bearer token for AuthToken (default: the ServiceAccount token).
	TokenFile string
	// KubeletCAFile is the CA that signed the kubelets' serving certificates. Default: the
	// cluster's CA from the kubeconfig, or the pod's ServiceAccount CA.
	KubeletCAFile string
	// InsecureSkipTLSVerify accepts any kubelet certificate: encrypted, but not authenticated.
	InsecureSkipTLSVerify bool
	Via                   Via
	// Timeout bounds each request. Default 10s.
	Timeout time.Duration
	// HTTP1 turns HTTP/2 off, to compare.
	HTTP1 bool
}

// Client talks to kubelets, and to the apiserver for discovery and the node proxy.
type Client struct {
	opts      Options
	apiserver kubernetes.Interface // nil without a kubeconfig
	kubelet   *http.Client
	// Credentials says, for the log and the reader, which credentials the kubelet gets.
	Credentials string
	scheme      string
}

// New makes a Client. apiserver may be nil: then only FetchURL works, with a token or nothing.
func New(apiserver *rest.Config, opts Options) (*Client, error) {
	if len(opts.AddressTypes) == 0 {
		opts.AddressTypes = DefaultAddressTypes
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Via == "" {
		opts.Via = ViaAuto
	}
	c := &Client{opts: opts, scheme: "https"}
	if apiserver != nil {
		cs, err := kubernetes.NewForConfig(withTimeout(apiserver, opts.Timeout))
		if err != nil {
			return nil, err
		}
		c.apiserver = cs
	}
	cfg, err := c.kubeletConfig(apiserver)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet transport: %w", err)
	}
	c.kubelet = &http.Client{Transport: rt, Timeout: opts.Timeout}
	return c, nil
}

func withTimeout(c *rest.Config, timeout time.Duration) *rest.Config {
	c = rest.CopyConfig(c)
	c.Timeout = timeout
	return c
}

// kubeletConfig is the rest.Config whose transport talks to kubelets: the chosen credentials,
// and the CA to check the kubelet's certificate against. client-go turns it into a transport
// with HTTP/2, token files re-read as they rotate, and exec plugins.
func (c *Client) kubeletConfig(apiserver *rest.Config) (*rest.Config, error) {
	cfg := &rest.Config{UserAgent: "kubelet-walkthrough-client"}
	auth := c.opts.Auth
	if auth == "" || auth == AuthAuto {
		switch {
		case c.opts.TokenFile != "":
			auth = AuthToken
		case fileExists(ServiceAccountTokenFile):
			auth, c.opts.TokenFile = AuthToken, ServiceAccountTokenFile
		case apiserver != nil:
			auth = AuthKubeconfig
		default:
			return nil, errors.New("no credentials for the kubelet: give --token-file, run in a pod with a ServiceAccount token, or use a kubeconfig")
		}
	}
	switch auth {
	case AuthToken:
		if c.opts.TokenFile == "" {
			c.opts.TokenFile = ServiceAccountTokenFile
		}
		if !fileExists(c.opts.TokenFile) {
			return nil, fmt.Errorf("token file %s does not exist", c.opts.TokenFile)
		}
		cfg.BearerTokenFile = c.opts.TokenFile
		c.Credentials = "bearer token from " + c.opts.TokenFile
	case AuthKubeconfig:
		if apiserver == nil {
			return nil, errors.New("--auth=kubeconfig needs a kubeconfig")
		}
		cfg.Username, cfg.Password = apiserver.Username, apiserver.Password
		cfg.BearerToken, cfg.BearerTokenFile = apiserver.BearerToken, apiserver.BearerTokenFile
		cfg.CertFile, cfg.KeyFile = apiserver.CertFile, apiserver.KeyFile
		cfg.CertData, cfg.KeyData = apiserver.CertData, apiserver.KeyData
		cfg.ExecProvider, cfg.AuthProvider = apiserver.ExecProvider, apiserver.AuthProvider
		c.Credentials = "the kubeconfig's credentials"
	case AuthNone:
		c.scheme = "http"
		c.Credentials = "none (plain HTTP)"
		if c.opts.KubeletPort == 0 {
			c.opts.KubeletPort = ReadOnlyPort
		}
		return cfg, nil
	default:
		return nil, fmt.Errorf("unknown --auth %q: use auto, token, kubeconfig or none", auth)
	}
	switch {
	case c.opts.InsecureSkipTLSVerify:
		cfg.Insecure = true
	case c.opts.KubeletCAFile != "":
		cfg.CAFile = c.opts.KubeletCAFile
	case apiserver != nil && (len(apiserver.CAData) > 0 || apiserver.CAFile != ""):
		cfg.CAData, cfg.CAFile = apiserver.CAData, apiserver.CAFile
	case fileExists(ServiceAccountCAFile):
		cfg.CAFile = ServiceAccountCAFile
	}
	if c.opts.HTTP1 {
		cfg.NextProtos = []string{"http/1.1"}
	}
	return cfg, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Result is what one node's kubelet answered.
type Result struct {
	Node string
	Pods []corev1.Pod
	// Via is "kubelet" or "apiserver"; URL is what was asked.
	Via, URL string
	// Protocol is the HTTP version the kubelet answered with ("HTTP/2.0").
	Protocol string
	// FellBack holds why the kubelet could not be reached, when the proxy answered instead.
	FellBack error
	Err      error
}

// Endpoint finds a node's kubelet through the apiserver.
func (c *Client) Endpoint(ctx context.Context, node string) (Endpoint, error) {
	if c.apiserver == nil {
		return Endpoint{}, errors.New("finding a node's kubelet needs a kubeconfig (or --kubelet-url)")
	}
	n, err := c.apiserver.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return Endpoint{}, fmt.Errorf("read node %s: %w", node, err)
	}
	return EndpointFor(n, c.opts.AddressTypes, c.opts.KubeletPort)
}

// Pods fetches one node's pods, by the way Options.Via says.
func (c *Client) Pods(ctx context.Context, node string) Result {
	if c.opts.Via == ViaAPIServer {
		return c.viaProxy(ctx, node)
	}
	e, err := c.Endpoint(ctx, node)
	var noAddress *NoAddressError
	if c.opts.Via == ViaAuto && errors.As(err, &noAddress) {
		// No address of the preferred types: the apiserver has its own order, let it try.
		proxied := c.viaProxy(ctx, node)
		proxied.FellBack = err
		return proxied
	}
	if err != nil {
		return Result{Node: node, Err: err}
	}
	url := e.URL()
	if c.scheme == "http" {
		url = strings.Replace(url, "https://", "http://", 1)
	}
	r := c.FetchURL(ctx, url)
	r.Node = node
	var kerr *Error
	if c.opts.Via == ViaAuto && errors.As(r.Err, &kerr) && kerr.Unreachable() {
		klog.FromContext(ctx).V(1).Info("Kubelet unreachable, asking the apiserver's node proxy", "node", node, "err", r.Err)
		proxied := c.viaProxy(ctx, node)
		proxied.FellBack = r.Err
		return proxied
	}
	return r
}

// FetchURL asks one kubelet, at url (https://host:port or http:// for the read-only port).
func (c *Client) FetchURL(ctx context.Context, url string) Result {
	r := Result{Via: "kubelet", URL: strings.TrimSuffix(url, "/") + "/pods"}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		r.Err = err
		return r
	}
	resp, err := c.kubelet.Do(req)
	if err != nil {
		r.Err = explain(r.URL, err, c.opts.Timeout)
		return r
	}
	defer func() { _ = resp.Body.Close() }()
	r.Protocol = resp.Proto
	klog.FromContext(ctx).V(2).Info("Kubelet answered", "url", r.URL, "status", resp.StatusCode, "protocol", resp.Proto, "credentials", c.Credentials)
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		r.Err = explain(r.URL, err, c.opts.Timeout)
		return r
	}
	if resp.StatusCode != http.StatusOK {
		r.Err = explainStatus(r.URL, resp.StatusCode, string(body), c.Credentials)
		return r
	}
	r.Pods, r.Err = decodePods(body)
	return r
}

// viaProxy asks the apiserver to fetch the node's /pods: GET /api/v1/nodes/NAME/proxy/pods.
func (c *Client) viaProxy(ctx context.Context, node string) Result {
	r := Result{Node: node, Via: "apiserver", URL: "/api/v1/nodes/" + node + "/proxy/pods"}
	if c.apiserver == nil {
		r.Err = errors.New("the apiserver's node proxy needs a kubeconfig")
		return r
	}
	body, err := c.apiserver.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "pods").DoRaw(ctx)
	if err != nil {
		r.Err = explainProxy(node, err)
		return r
	}
	r.Pods, r.Err = decodePods(body)
	return r
}

func decodePods(body []byte) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode the PodList: %w", err)
	}
	return list.Items, nil
}

// AllNodes lists the nodes and fetches each node's pods, at most concurrency at a time. A node
// that fails has its Err set; the others are unaffected. Results are sorted by node name.
func (c *Client) AllNodes(ctx context.Context, concurrency int) ([]Result, error) {
	if c.apiserver == nil {
		return nil, errors.New("--all-nodes needs a kubeconfig")
	}
	nodes, err := c.apiserver.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	results := make([]Result, len(nodes.Items))
	limit := make(chan struct{}, max(concurrency, 1))
	var wg sync.WaitGroup
	for i, n := range nodes.Items {
		wg.Go(func() {
			limit <- struct{}{}
			defer func() { <-limit }()
			results[i] = c.Pods(ctx, n.Name)
		})
	}
	wg.Wait()
	sort.Slice(results, func(i, j int) bool { return results[i].Node < results[j].Node })
	return results, nil
}
