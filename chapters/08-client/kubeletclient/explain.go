package kubeletclient

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Kind sorts failures by what the reader has to do about them.
type Kind string

const (
	Refused      Kind = "connection refused"
	Timeout      Kind = "timeout"
	Unroutable   Kind = "unreachable"
	TLS          Kind = "certificate not trusted"
	Unauthorized Kind = "unauthorized"
	Forbidden    Kind = "forbidden"
	Status       Kind = "error status"
	Transport    Kind = "connection failed"
)

// Error is a failed request to a kubelet, with what to do about it.
type Error struct {
	Kind Kind
	URL  string
	Err  error
	// Hint says what to do, in a sentence or three.
	Hint string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %v\n  %s", e.Kind, e.Err, strings.ReplaceAll(e.Hint, "\n", "\n  "))
}

func (e *Error) Unwrap() error { return e.Err }

// Unreachable says the kubelet could not be reached at all — the only case in which the
// client falls back to the apiserver's node proxy: a kubelet that answered 401, 403 or with a
// certificate the client does not trust was reached, and the proxy would hide the problem.
func (e *Error) Unreachable() bool {
	return e.Kind == Refused || e.Kind == Timeout || e.Kind == Unroutable
}

// explain classifies a transport error.
func explain(url string, err error, timeout time.Duration) error {
	e := &Error{URL: url, Err: err, Kind: Transport}
	var unknownCA x509.UnknownAuthorityError
	var dialErr *net.OpError
	var dnsErr *net.DNSError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var netErr net.Error
	switch {
	case errors.As(err, &unknownCA):
		e.Kind, e.Hint = TLS, selfSignedHint
	case errors.As(err, &hostname):
		e.Kind = TLS
		e.Hint = fmt.Sprintf("The kubelet's certificate is not valid for %s. Reach it by a name the certificate holds "+
			"(--kubelet-preferred-address-types=Hostname), or:\n", hostname.Host) + fixesHint
	case errors.As(err, &invalid):
		e.Kind, e.Hint = TLS, "The kubelet's certificate is invalid ("+invalid.Error()+"). Check the node's clock and certificate rotation, or:\n"+fixesHint
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Kind = Refused
		e.Hint = "Nothing listens there. If this is the read-only port 10255, it is off by default since the kubelet's " +
			"configuration file exists (readOnlyPort: 0): use the secure port — the Node's " +
			".status.daemonEndpoints.kubeletEndpoint.port, usually 10250 — with a token (--auth=token)."
	case errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		e.Kind = Timeout
		e.Hint = fmt.Sprintf("No answer within %s (--request-timeout). The address may not be routable from here "+
			"(minikube's docker driver on macOS: the node IP is not reachable from the host): "+
			"try --via=apiserver, another --kubelet-preferred-address-types, or a longer --request-timeout.", timeout)
	case errors.As(err, &dnsErr) || (errors.As(err, &dialErr) && dialErr.Op == "dial"):
		e.Kind = Unroutable
		e.Hint = "The kubelet could not be reached. --via=auto falls back to the apiserver's node proxy; " +
			"--via=apiserver goes there directly."
	default:
		e.Hint = "The connection failed after the kubelet was reached (a TLS alert, or another protocol: " +
			"an http:// read-only port behind an https:// URL?). The proxy would hide this, so there is no failover."
	}
	return e
}

const fixesHint = `  - --kubelet-ca-file=<the CA, or the kubelet's own certificate>: on minikube, /var/lib/kubelet/pki/kubelet.crt on the node
  - serverTLSBootstrap: true in the kubelet's configuration, and approve its CSR: the cluster CA then signs the kubelet's certificate
  - --insecure-skip-tls-verify: encrypted, but anyone on the path can pretend to be the kubelet
  - --via=apiserver: the apiserver talks to the kubelet for you`

const selfSignedHint = "The kubelet's certificate is not signed by a CA you trust: on minikube and kubeadm clusters " +
	"without serverTLSBootstrap, each kubelet signs its own certificate at start (cmd/kubelet/app/server.go, InitializeTLS). Choose one:\n" + fixesHint

// forbiddenBody is the kubelet's 403 text: Forbidden (user=U, verb=V, resource=nodes, subresource(s)=[pods proxy]).
var forbiddenBody = regexp.MustCompile(`user=([^,]*), verb=([^,]*), resource=([^,]*), subresource\(s\)=\[([^\]]*)\]`)

// explainStatus turns a kubelet's non-200 answer into advice.
func explainStatus(url string, code int, body, credentials string) error {
	e := &Error{URL: url, Err: fmt.Errorf("GET %s: %d %s: %s", url, code, http.StatusText(code), strings.TrimSpace(body))}
	switch code {
	case http.StatusUnauthorized:
		e.Kind = Unauthorized
		e.Hint = "The kubelet did not accept the credentials (" + credentials + "). Anonymous requests are refused " +
			"(authentication.anonymous.enabled: false); a token must pass the apiserver's TokenReview (an expired or " +
			"deleted ServiceAccount's token does not), and a client certificate must be signed by the kubelet's client CA."
	case http.StatusForbidden:
		e.Kind = Forbidden
		e.Hint = "Authenticated, but not allowed. Grant get on nodes/pods (or nodes/proxy): kubectl apply -f examples/rbac/"
		if m := forbiddenBody.FindStringSubmatch(body); m != nil {
			var asked []string
			for _, sub := range strings.Fields(m[4]) {
				asked = append(asked, m[3]+"/"+sub)
			}
			e.Hint = fmt.Sprintf("%s may not %s %s — the kubelet asked the apiserver for each, in this order (v1.37 checks "+
				"nodes/pods before nodes/proxy). Grant %s %s, the narrower one: kubectl apply -f examples/rbac/",
				m[1], m[2], strings.Join(asked, " nor "), m[2], asked[0])
		}
	default:
		e.Kind = Status
		e.Hint = "The kubelet answered with an error."
	}
	return e
}

// explainProxy explains a failure of the apiserver's node proxy.
func explainProxy(node string, err error) error {
	e := &Error{URL: "/api/v1/nodes/" + node + "/proxy/pods", Err: err, Kind: Status, Hint: "The apiserver could not proxy to the kubelet."}
	switch {
	case apierrors.IsForbidden(err):
		e.Kind = Forbidden
		e.Hint = "The apiserver's node proxy needs get on nodes/proxy (not nodes/pods): kubectl apply -f examples/rbac/"
	case apierrors.IsUnauthorized(err):
		e.Kind = Unauthorized
		e.Hint = "The apiserver did not accept the kubeconfig's credentials."
	case apierrors.IsNotFound(err):
		e.Hint = "There is no node " + node + ": kubectl get nodes lists them."
	}
	return e
}
