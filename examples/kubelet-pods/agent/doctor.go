package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

// Verdict is how a check went.
type Verdict string

const (
	OK      Verdict = "ok"
	Warn    Verdict = "warn"
	Fail    Verdict = "FAIL"
	Skipped Verdict = "skipped"
)

// Check is one step of Doctor: what was checked on which node, how it went, and — when it
// did not go well — what to do.
type Check struct {
	Node    string  `json:"node"`
	Name    string  `json:"check"`
	Verdict Verdict `json:"verdict"`
	Detail  string  `json:"detail"`
	Fix     string  `json:"fix,omitempty"`
}

// The checks, in the order Doctor runs them.
const (
	CheckDiscovery   = "discovery"
	CheckNetwork     = "dns/tcp"
	CheckTLS         = "tls"
	CheckCredentials = "credentials"
	CheckPermissions = "permissions"
	CheckFetch       = "fetch"
)

// Doctor walks the way to one node's kubelet, as c would take it, step by step — the Node's address and port, DNS
// and TCP, the kubelet's certificate (names, issuer, expiry, pending serving CSRs), who the
// credentials make the client (SelfSubjectReview), what that identity may do
// (SelfSubjectAccessReview for nodes/pods and nodes/proxy) and finally /pods — and says at each
// step what is wrong and what to do. It sends the kubelet nothing secret before the TLS step
// has checked its certificate; the identity checks ask the apiserver, as the identity itself.
func Doctor(ctx context.Context, c *kubeletclient.Client, node string) []Check {
	var checks []Check
	add := func(name string, v Verdict, detail, fix string) {
		checks = append(checks, Check{Node: node, Name: name, Verdict: v, Detail: detail, Fix: fix})
	}
	failed := func(name string) bool {
		for _, ch := range checks {
			if ch.Name == name && ch.Verdict == Fail {
				return true
			}
		}
		return false
	}

	// 1. Discovery.
	var endpoint kubeletclient.Endpoint
	n, err := c.Node(ctx, node)
	if err == nil {
		endpoint, err = c.EndpointOf(n)
	}
	switch {
	case err != nil:
		quoted, ok := quoteArgs(node)
		if !ok {
			quoted = "NAME"
		}
		add(CheckDiscovery, Fail, err.Error(), "kubectl get node "+quoted+" -o yaml: check .status.addresses and .status.daemonEndpoints; --kubelet-preferred-address-types chooses among the addresses")
	default:
		detail := fmt.Sprintf("%s (%s; port from %s)", net.JoinHostPort(endpoint.Address.Address, strconv.Itoa(endpoint.Port)), endpoint.Address.Type, endpoint.PortFrom)
		if endpoint.ServerName != "" {
			detail += "; certificate checked for " + endpoint.ServerName
		}
		add(CheckDiscovery, OK, detail, "")
	}

	// 2. DNS and TCP.
	addr := net.JoinHostPort(endpoint.Address.Address, strconv.Itoa(endpoint.Port))
	if failed(CheckDiscovery) {
		add(CheckNetwork, Skipped, "no address", "")
	} else {
		add(checkNetwork(ctx, c, endpoint, addr))
	}

	// 3. TLS: the certificate the kubelet shows, read without sending anything.
	if failed(CheckDiscovery) || failed(CheckNetwork) {
		add(CheckTLS, Skipped, "no connection", "")
	} else {
		add(checkTLS(ctx, c, n, endpoint, addr))
	}

	// 4 and 5. Who the credentials make the client, and what it may do.
	user, identity, err := whoAmI(ctx, c)
	switch {
	case c.AuthMode() == kubeletclient.AuthNone:
		add(CheckCredentials, Warn, "none: the kubelet sees system:anonymous", "a kubelet configured by a file refuses anonymous requests (authentication.anonymous.enabled: false): use --auth=token or --auth=auto")
		add(CheckPermissions, Skipped, "anonymous", "")
	case err != nil:
		add(CheckCredentials, Fail, c.Credentials+": "+firstLineOf(err), credentialsFix(err))
		add(CheckPermissions, Skipped, "no identity", "")
	default:
		add(CheckCredentials, OK, fmt.Sprintf("%s: the kubelet will see %s (groups %s)", c.Credentials, user.Username, strings.Join(user.Groups, ", ")), "")
		add(checkPermissions(ctx, c, node, user.Username, identity))
	}

	// 6. The real thing.
	if failed(CheckDiscovery) {
		add(CheckFetch, Skipped, "", "")
	} else {
		r := c.GetOf(ctx, n, kubeletclient.ReadEndpoints["pods"])
		r.Err, r.FellBack = Explain(ctx, c, r.Err), Explain(ctx, c, r.FellBack)
		switch {
		case r.Err != nil:
			add(CheckFetch, Fail, firstLineOf(r.Err), hintOf(r.Err))
		case r.FellBack != nil:
			add(CheckFetch, Warn, fmt.Sprintf("%d pods, through the apiserver's node proxy: the kubelet could not be reached", len(r.Pods)), hintOf(r.FellBack))
		default:
			add(CheckFetch, OK, fmt.Sprintf("%d pods from %s over %s", len(r.Pods), r.URL, r.Protocol), "")
		}
	}
	return checks
}

func checkNetwork(ctx context.Context, c *kubeletclient.Client, e kubeletclient.Endpoint, addr string) (string, Verdict, string, string) {
	ctx, cancel := context.WithTimeout(ctx, c.Options().Timeout)
	defer cancel()
	host := e.Address.Address
	resolved := host
	if net.ParseIP(host) == nil {
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return CheckNetwork, Fail, "DNS: " + err.Error(), "the name " + host + " does not resolve from here: prefer InternalIP (--kubelet-preferred-address-types=InternalIP,…) and check the certificate by name with --kubelet-tls-server-name=Hostname"
		}
		resolved = strings.Join(ips, ", ")
	}
	start := time.Now()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		fix := "nothing listens there, or a firewall rejects: check the kubelet runs and --port; --via=apiserver goes through the control plane"
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			fix = "no route from here (minikube's docker driver on macOS, a private node network): --via=apiserver, or another address type"
		}
		return CheckNetwork, Fail, "TCP " + addr + ": " + err.Error(), fix
	}
	_ = conn.Close()
	return CheckNetwork, OK, fmt.Sprintf("%s resolves to %s; TCP connected in %s", host, resolved, time.Since(start).Round(time.Millisecond)), ""
}

// checkTLS reads the kubelet's certificate with a handshake that verifies nothing and sends no
// client certificate, then checks it the way the client will: against the configured CA, for
// the name the client will check.
func checkTLS(ctx context.Context, c *kubeletclient.Client, n *corev1.Node, e kubeletclient.Endpoint, addr string) (string, Verdict, string, string) {
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: c.Options().Timeout}, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // reading, not trusting
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		detail := "handshake: " + err.Error()
		var notTLS tls.RecordHeaderError
		switch {
		case isRemoteAlert(err, alertInternalError):
			// The kubelet answered in TLS, and failed on its side: no certificate to show
			// (serverTLSBootstrap, its CSR not approved yet). Which CSR, the apiserver says.
			pending, lerr := pendingServingCSRs(ctx, c, n.Name)
			detail += "; " + describeCSRs(pending, lerr)
			fix := "the kubelet has no serving certificate to show (with serverTLSBootstrap, not until its CSR is approved). " + servingCSRAdvice(n.Name, pending, lerr)
			if lerr == nil && len(pending) > 0 {
				fix = "the kubelet has no serving certificate until its CSR is approved: kubectl certificate approve " + strings.Join(pending, " ")
			}
			return CheckTLS, Fail, detail, fix
		case errors.As(err, &notTLS):
			return CheckTLS, Fail, detail, "the port does not speak TLS: its first bytes are not a TLS record (a read-only port, 10255, speaks plain HTTP)"
		default:
			return CheckTLS, Fail, detail, "the kubelet's port refused the handshake"
		}
	}
	state := conn.(*tls.Conn).ConnectionState()
	_ = conn.Close()
	if len(state.PeerCertificates) == 0 {
		return CheckTLS, Fail, "no certificate", ""
	}
	leaf := state.PeerCertificates[0]
	names := append([]string(nil), leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	detail := fmt.Sprintf("SANs [%s], issuer %q, expires %s", strings.Join(names, " "), leaf.Issuer.CommonName, leaf.NotAfter.UTC().Format(time.RFC3339))
	if pending, err := pendingServingCSRs(ctx, c, n.Name); !errors.Is(err, errNoLookup) {
		detail += "; " + describeCSRs(pending, err)
	}
	if c.Options().InsecureSkipTLSVerify {
		return CheckTLS, Warn, detail + "; not verified (--insecure-skip-tls-verify)", "verify instead: --kubelet-ca-file, --kubelet-tls-server-name=Hostname"
	}
	serverName := e.Address.Address
	if e.ServerName != "" {
		serverName = e.ServerName
	}
	roots, err := kubeletRoots(c)
	if err != nil {
		return CheckTLS, Fail, detail + "; " + err.Error(), "--kubelet-ca-file=<the CA that signs the kubelets' certificates>"
	}
	intermediates := x509.NewCertPool()
	for _, cert := range state.PeerCertificates[1:] {
		intermediates.AddCert(cert)
	}
	_, verr := leaf.Verify(x509.VerifyOptions{DNSName: serverName, Roots: roots, Intermediates: intermediates})
	var hostname x509.HostnameError
	switch {
	case verr == nil && time.Until(leaf.NotAfter) < leaf.NotAfter.Sub(leaf.NotBefore)/10:
		// The kubelet's certificate manager rotates between 70% and 90% of the lifetime: a
		// certificate in its last tenth should have been replaced already.
		return CheckTLS, Warn, detail + "; in the last tenth of its lifetime, expires in " + time.Until(leaf.NotAfter).Round(time.Minute).String(),
			"rotation should have replaced it: check rotateCertificates / serverTLSBootstrap, and approve pending serving CSRs"
	case verr == nil:
		return CheckTLS, OK, detail + "; trusted for " + serverName, ""
	case errors.As(verr, &hostname):
		fix := "the certificate does not name " + serverName + ": " + strings.Split(fixesHint, "\n")[0]
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeHostName && leaf.VerifyHostname(a.Address) == nil {
				fix = "the certificate names the Node's Hostname (" + a.Address + "): --kubelet-tls-server-name=Hostname checks it by that name while dialing " + e.Address.Address
			}
		}
		return CheckTLS, Fail, detail + "; " + verr.Error(), fix
	case leaf.Issuer.String() == leaf.Subject.String() || strings.Contains(leaf.Issuer.CommonName, "@"):
		return CheckTLS, Fail, detail + "; " + verr.Error(), "self-signed by the kubelet (no serverTLSBootstrap): have the cluster CA sign it (serverTLSBootstrap: true, then kubectl certificate approve), or trust this certificate with --kubelet-ca-file"
	default:
		return CheckTLS, Fail, detail + "; " + verr.Error(), "not signed by the CA the client trusts: --kubelet-ca-file=<the CA of the kubelets' serving certificates>"
	}
}

// kubeletRoots is the CA pool the client checks kubelets against, as it chose it.
func kubeletRoots(c *kubeletclient.Client) (*x509.CertPool, error) {
	if c.KubeletConfig() == nil {
		return nil, errors.New("not checked: with --via=apiserver the client does not talk to kubelets")
	}
	tlsConfig, err := rest.TLSConfigFor(c.KubeletConfig())
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil || tlsConfig.RootCAs == nil {
		return x509.SystemCertPool()
	}
	return tlsConfig.RootCAs, nil
}

// pendingServingCSRs names the node's kubelet-serving CSRs that nobody approved or denied yet.
// Without a kubeconfig it says errNoLookup.
func pendingServingCSRs(ctx context.Context, c *kubeletclient.Client, node string) ([]string, error) {
	if c.APIServer() == nil {
		return nil, errNoLookup
	}
	csrs, err := c.APIServer().CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: "spec.signerName=" + certificatesv1.KubeletServingSignerName})
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, csr := range csrs.Items {
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.Spec.Username != "system:node:"+node {
			continue
		}
		decided := false
		for _, cond := range csr.Status.Conditions {
			decided = decided || cond.Type == certificatesv1.CertificateApproved || cond.Type == certificatesv1.CertificateDenied
		}
		// A CSR's name is a DNS-1123 subdomain; one that is not did not come from a real
		// apiserver, and goes into no command.
		if !decided && len(apivalidation.NameIsDNSSubdomain(csr.Name, false)) == 0 {
			pending = append(pending, csr.Name)
		}
	}
	return pending, nil
}

// describeCSRs is pendingServingCSRs' answer for doctor's tls line.
func describeCSRs(pending []string, err error) string {
	switch {
	case err != nil:
		return "pending CSRs not checked (" + firstLineOf(err) + ")"
	case len(pending) == 0:
		return "no pending serving CSR"
	default:
		return "pending serving CSRs: " + strings.Join(pending, " ") + " (kubectl certificate approve " + strings.Join(pending, " ") + ")"
	}
}

// whoAmI asks the apiserver who the kubelet's credentials are, with those credentials: a
// SelfSubjectReview, which any authenticated identity may make. The kubelet's TokenReview asks the
// same authenticators, so it will see the same user. The credentials go there only as
// kubeletclient.CredentialsConfig lets them: over verified https.
func whoAmI(ctx context.Context, c *kubeletclient.Client) (authenticationv1.UserInfo, kubernetes.Interface, error) {
	cfg, err := c.CredentialsConfig()
	if err != nil {
		return authenticationv1.UserInfo{}, nil, err
	}
	cs, err := kubeletclient.NewAPIServerClient(cfg, c.Options().MaxResponseBytes)
	if err != nil {
		return authenticationv1.UserInfo{}, nil, err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, nil, fmt.Errorf("SelfSubjectReview: %w", err)
	}
	return review.Status.UserInfo, cs, nil
}

// checkPermissions asks, as the identity, what the kubelet will ask about it: get nodes/pods
// (all /pods needs) and get nodes/proxy (the fallback the kubelet tries, which also opens exec).
func checkPermissions(ctx context.Context, c *kubeletclient.Client, node, user string, cs kubernetes.Interface) (string, Verdict, string, string) {
	can := func(sub string) (bool, error) {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: sub, Name: node, Version: "v1"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return r.Status.Allowed, nil
	}
	pods, err := can("pods")
	if err != nil {
		return CheckPermissions, Fail, "SelfSubjectAccessReview: " + firstLineOf(err), ""
	}
	proxy, err := can("proxy")
	if err != nil {
		return CheckPermissions, Fail, "SelfSubjectAccessReview: " + firstLineOf(err), ""
	}
	detail := fmt.Sprintf("get nodes/pods: %s; get nodes/proxy: %s", yesNo(pods), yesNo(proxy))
	switch {
	case pods && proxy && c.Options().Via != kubeletclient.ViaAPIServer:
		return CheckPermissions, Warn, detail, "nodes/proxy is more than /pods needs, and opens exec on every node: drop it unless the node proxy is really needed (examples/rbac grants nodes/pods only)"
	case pods || proxy:
		return CheckPermissions, OK, detail, ""
	default:
		return CheckPermissions, Fail, detail, "grant get nodes/pods: " + grantHint(user, kubeletclient.ReadEndpoints["pods"].Permission)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func firstLineOf(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

func hintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		line, _, _ := strings.Cut(e.Hint, "\n")
		return line
	}
	return ""
}

func credentialsFix(err error) string {
	var noToken *kubeletclient.TokenRequestError
	var refused *kubeletclient.CredentialsRefusedError
	switch {
	case errors.As(err, &noToken):
		return "create the ServiceAccount (kubectl apply -f examples/rbac/), name another with --service-account, or pass --token-file"
	case errors.As(err, &refused):
		return "nothing was sent: " + refused.Fix
	}
	return "the apiserver does not accept these credentials: an expired or deleted ServiceAccount's token, or a wrong --token-file"
}
