// Package agent is what the production client, kubelet-pods, adds to chapter 11's kubeletclient:
// each failed request explained — what went wrong, whose identity was refused, what to grant
// (only what examples/rbac really grants), which CSR to approve (Explain); every node asked at
// once (AllNodes); and doctor, the way to a kubelet checked step by step (Doctor). Like
// kubeletclient it imports client-go and the API types only, so that an agent can use it too.
package agent

import (
	"context"
	"crypto/tls"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

// Kind sorts failures by what the reader has to do about them.
type Kind string

const (
	Refused        Kind = "connection refused"
	ConnectTimeout Kind = "connect timeout" // no TCP connection within the timeout
	Timeout        Kind = "timeout"         // connected, but no answer within the timeout
	Deadline       Kind = "deadline"        // --all-nodes' overall deadline passed
	Unroutable     Kind = "unreachable"
	TLS            Kind = "certificate not trusted"
	// HandshakeRefused: the kubelet ended the TLS handshake with an internal_error alert, as a
	// kubelet without a serving certificate does (serverTLSBootstrap, its CSR not approved yet).
	HandshakeRefused Kind = "handshake refused"
	Unauthorized     Kind = "unauthorized"
	Forbidden        Kind = "forbidden"
	Credentials      Kind = "credentials" // no credentials could be had, or they were not sent
	Status           Kind = "error status"
	Transport        Kind = "connection failed"
)

// Party says whose request was refused, so that the reader fixes the right identity.
type Party string

const (
	// PartyClient is this client's own identity: its token, the ServiceAccount's RBAC.
	PartyClient Party = "client"
	// PartyAPIServer is the apiserver's kubelet-client identity, which the node proxy uses
	// towards the kubelet (--kubelet-client-certificate).
	PartyAPIServer Party = "apiserver"
)

// Error is a failed request to a kubelet, with what to do about it.
type Error struct {
	Kind Kind
	// URL is what was dialed; ServerName, when set, the name the kubelet's certificate was
	// checked for instead of the URL's host (--kubelet-tls-server-name).
	URL, ServerName string
	Err             error
	// Party, for 401 and 403, says whose identity was refused.
	Party Party
	// Timeout is the limit that passed, for Timeout, ConnectTimeout and Deadline.
	Timeout time.Duration
	// Hint says what to do, in a sentence or three.
	Hint string
	// request is the failed request Explain explained (Unreachable asks it).
	request *kubeletclient.RequestError
}

func (e *Error) Error() string {
	var head string
	target := e.URL
	if e.ServerName != "" {
		target += " (certificate checked for " + e.ServerName + ")"
	}
	switch e.Kind {
	case ConnectTimeout:
		head = fmt.Sprintf("timed out after %s connecting to %s", e.Timeout, target)
	case Timeout:
		head = fmt.Sprintf("timed out after %s waiting for %s to answer (connected)", e.Timeout, target)
	case Deadline:
		head = fmt.Sprintf("timed out after %s (--all-nodes-timeout): %v", e.Timeout, e.Err)
	default:
		head = fmt.Sprintf("%s: %v", e.Kind, e.Err)
	}
	return head + "\n  " + strings.ReplaceAll(e.Hint, "\n", "\n  ")
}

func (e *Error) Unwrap() error { return e.Err }

// Unreachable is kubeletclient's verdict on the request this Error explains:
// RequestError.Unreachable, the one rule that decides the failover to the apiserver's node proxy
// (nothing listens, no TCP connection in time, no route or no such name). A kubelet that accepted
// the connection was reached; an Error that holds no request (a proxy's answer) says false.
func (e *Error) Unreachable() bool {
	return e.request != nil && e.request.Unreachable()
}

// Explain turns a failed request of c (a kubeletclient.RequestError, anywhere in err's chain)
// into an Error that says what to do; any other error comes back as it is. For a kubelet without
// a serving certificate it asks the apiserver which CSR of the node is pending.
func Explain(ctx context.Context, c *kubeletclient.Client, err error) error {
	var r *kubeletclient.RequestError
	var explained *Error
	switch {
	case err == nil || errors.As(err, &explained) || !errors.As(err, &r):
		return err // nothing to explain, or explained already
	case r.Proxy:
		return explainProxy(r.Node, r.URL, r.Err)
	case r.StatusCode != 0:
		return explainStatus(r)
	}
	e := explain(r.URL, r.Err, r.Timeout, r.Connected)
	e.request = r
	e.ServerName = r.ServerName
	if e.Kind == HandshakeRefused && r.Node != "" {
		// No serving certificate: name the CSR to approve, when the apiserver can say.
		pending, err := pendingServingCSRs(ctx, c, r.Node)
		e.Hint = noServingCertificateHint + " " + servingCSRAdvice(r.Node, pending, err)
	}
	return e
}

// explain classifies a transport error. connected says whether TCP connected.
func explain(url string, err error, timeout time.Duration, connected bool) *Error {
	e := &Error{URL: url, Err: err, Kind: Transport}
	var unknownCA x509.UnknownAuthorityError
	var dialErr *net.OpError
	var dnsErr *net.DNSError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var netErr net.Error
	var refused *kubeletclient.CredentialsRefusedError
	var noToken *kubeletclient.TokenRequestError
	switch {
	case errors.As(err, &refused):
		e.Kind, e.Err, e.Hint = Credentials, refused, "Nothing was sent."
	case errors.As(err, &noToken):
		e.Kind, e.Err = Credentials, noToken
		e.Hint = "Outside a pod, --auth=auto asks the apiserver for a short-lived token of a dedicated ServiceAccount " +
			"instead of sending your own credentials to kubelets. Create it (kubectl apply -f examples/rbac/), name another with " +
			"--service-account=NAMESPACE/NAME, pass one with --token-file, send your own with --auth=kubeconfig, " +
			"or go --via=apiserver."
		if apierrors.IsForbidden(noToken.Err) {
			e.Hint = "You may not create tokens for that ServiceAccount (create serviceaccounts/token). " + e.Hint
		}
	case errors.As(err, &unknownCA):
		e.Kind, e.Hint = TLS, selfSignedHint
	case errors.As(err, &hostname):
		e.Kind = TLS
		e.Hint = fmt.Sprintf("The kubelet's certificate is not valid for %s. Check it against a name it holds "+
			"(--kubelet-tls-server-name=Hostname), reach it by that name (--kubelet-preferred-address-types=Hostname), or:\n", hostname.Host) + fixesHint
	case errors.As(err, &invalid):
		e.Kind, e.Hint = TLS, "The kubelet's certificate is invalid ("+invalid.Error()+"). Check the node's clock and certificate rotation, or:\n"+fixesHint
	case isRemoteAlert(err, alertInternalError):
		// The kubelet has no certificate to show. Which CSR to approve needs the node's name
		// and the apiserver: Explain adds it when it has both (servingCSRAdvice).
		e.Kind, e.Hint = HandshakeRefused, noServingCertificateHint+" "+servingCSRAdvice("", nil, errNoLookup)
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Kind = Refused
		e.Hint = "Nothing listens there. If this is the read-only port 10255, it is off by default since the kubelet's " +
			"configuration file exists (readOnlyPort: 0): use the secure port — the Node's " +
			".status.daemonEndpoints.kubeletEndpoint.port, usually 10250 — with a token (--auth=token)."
	case errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		e.Timeout = timeout
		if connected {
			e.Kind = Timeout
			e.Hint = "The kubelet accepted the connection but did not answer in time (--request-timeout): it is slow or " +
				"overloaded, or something in between holds the connection. The apiserver's node proxy would wait for the same " +
				"kubelet, so there is no failover; try a longer --request-timeout."
		} else {
			e.Kind = ConnectTimeout
			e.Hint = "No connection within the timeout: the address is probably not routable from here (minikube's docker " +
				"driver on macOS: the node IP is not reachable from the host). --via=auto falls back to the apiserver's node " +
				"proxy; otherwise try --via=apiserver or another --kubelet-preferred-address-types."
		}
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

// alertInternalError is TLS's internal_error alert (RFC 8446, section 6.2): what Go's server
// sends when its GetCertificate fails, as the kubelet's does while it has no serving
// certificate (pkg/kubelet/kubelet.go#L962-L968 (kubeDeps.TLSConfig.GetCertificate)).
const alertInternalError tls.AlertError = 80

// isRemoteAlert says whether err is the alert a, sent by the other side. crypto/tls reports a
// received alert as a net.OpError "remote error" around its unexported alert type, whose text
// is AlertError's. A port that does not speak TLS at all gives a tls.RecordHeaderError instead.
func isRemoteAlert(err error, a tls.AlertError) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error" && op.Err != nil && op.Err.Error() == a.Error()
}

const noServingCertificateHint = "The kubelet failed the TLS handshake on its side (alert internal_error), as a kubelet with no " +
	"serving certificate does: with serverTLSBootstrap: true it has none until its kubernetes.io/kubelet-serving CSR is " +
	"approved and signed. The proxy would meet the same, so there is no failover."

// errNoLookup says the node's CSRs could not be looked up: no node name, or no kubeconfig.
var errNoLookup = errors.New("not looked up")

// servingCSRAdvice says what to do about a kubelet without a serving certificate, given the
// pending kubelet-serving CSRs of node and whether they could be looked up (lookupErr).
func servingCSRAdvice(node string, pending []string, lookupErr error) string {
	const unsigned = "kubectl get csr shows whether one was denied, or approved and not signed yet (kube-controller-manager's " +
		"csrsigning controller signs them); the kubelet's log says \"no serving certificate available for the kubelet\" while it has none."
	const look = "Find the node's CSR: kubectl get csr --field-selector spec.signerName=kubernetes.io/kubelet-serving " +
		"(requestor system:node:<node>), then kubectl certificate approve <name>. With none pending, " + unsigned
	switch {
	case errors.Is(lookupErr, errNoLookup):
		return look
	case lookupErr != nil:
		return "Its CSRs could not be looked up (" + firstLineOf(lookupErr) + "). " + look
	case len(pending) > 0:
		return "Pending for " + node + ": " + strings.Join(pending, " ") + ": kubectl certificate approve " + strings.Join(pending, " ")
	default:
		return "No kubernetes.io/kubelet-serving CSR of " + node + " is pending: " + unsigned
	}
}

const fixesHint = `  - --kubelet-ca-file=<the CA, or the kubelet's own certificate>: on minikube, /var/lib/kubelet/pki/kubelet.crt on the node
    (with --kubelet-tls-server-name=Hostname when the certificate names the host only)
  - serverTLSBootstrap: true in the kubelet's configuration, and approve its CSR: the cluster CA then signs the kubelet's certificate
  - --via=apiserver: the apiserver talks to the kubelet for you
  - --insecure-skip-tls-verify: encrypted, but anyone on the path can pretend to be the kubelet (credentials then need --allow-credentials-to-unverified-kubelet)`

const selfSignedHint = "The kubelet's certificate is not signed by a CA you trust: on minikube and kubeadm clusters " +
	"without serverTLSBootstrap, each kubelet signs its own certificate at start (cmd/kubelet/app/server.go, InitializeTLS). Choose one:\n" + fixesHint

// forbiddenBody is the kubelet's 403 text: Forbidden (user=U, verb=V, resource=nodes, subresource(s)=[pods proxy]).
var forbiddenBody = regexp.MustCompile(`user=([^,]*), verb=([^,]*), resource=([^,]*), subresource\(s\)=\[([^\]]*)\]`)

// explainStatus turns a kubelet's non-200 answer into advice. The body — the kubelet answers
// errors in plain text — is quoted in r's message as it came; r.Permission is what the endpoint
// asked for needs ("get nodes/pods"; ReadEndpoint.Permission).
func explainStatus(r *kubeletclient.RequestError) error {
	e := &Error{URL: r.URL, Err: r, request: r}
	code, credentials := r.StatusCode, r.Credentials
	switch {
	case code == http.StatusUnauthorized:
		e.Kind, e.Party = Unauthorized, PartyClient
		e.Hint = "The kubelet did not accept the credentials (" + credentials + "). Anonymous requests are refused " +
			"(authentication.anonymous.enabled: false); a token must pass the apiserver's TokenReview (an expired or " +
			"deleted ServiceAccount's token does not), and a client certificate must be signed by the kubelet's client CA."
	case code == http.StatusForbidden:
		e.Kind, e.Party = Forbidden, PartyClient
		e.Hint = forbiddenHint(r.Body, r.Permission)
	case code >= 300 && code < 400:
		e.Kind = Status
		e.Hint = "The kubelet (or what answers at that address) redirects to " + kubeletclient.Printable(kubeletclient.RedactURL(r.Location), false) +
			"; a kubelet's /pods never does, and the client does not follow: credentials could go with it."
	default:
		e.Kind = Status
		e.Hint = "The kubelet answered with an error; its own words are quoted above."
	}
	return e
}

// explainProxy explains a failure of the apiserver's node proxy. The apiserver answers its own
// errors with a JSON Status; what the kubelet answered the apiserver comes back as the kubelet
// wrote it, in plain text, which client-go keeps as an "unexpected server response" — and then
// the identity the kubelet refused is the apiserver's, not the reader's.
func explainProxy(node, url string, err error) error {
	e := &Error{URL: url, Err: err, Kind: Status, Hint: "The apiserver could not proxy to the kubelet."}
	if code, text, relayed := relayedFromKubelet(err); relayed {
		e.Err = fmt.Errorf("GET %s: %d %s, relayed from the kubelet: %s", url, code, http.StatusText(code), kubeletclient.QuotedBody(text))
		switch {
		case code == http.StatusUnauthorized:
			e.Kind, e.Party = Unauthorized, PartyAPIServer
			e.Hint = "The kubelet did not accept the apiserver's own kubelet-client identity — not yours: the apiserver let " +
				"you through. The apiserver's --kubelet-client-certificate must be signed by the CA in the kubelet's " +
				"authentication.x509.clientCAFile (kubeadm: apiserver-kubelet-client.crt, signed by the cluster CA)."
		case code == http.StatusForbidden:
			e.Kind, e.Party = Forbidden, PartyAPIServer
			user, subject := "the apiserver's kubelet-client user", "--user=NAME (the apiserver's kubelet-client certificate's common name)"
			if m := forbiddenBody.FindStringSubmatch(text); m != nil {
				user = kubeletclient.Printable(m[1], false)
				// The kubelet's text, relayed: quoted for a shell, or left out of the command.
				if quoted, err := ShellQuote(m[1]); err == nil {
					subject = "--user=" + quoted
				}
			}
			e.Hint = "The kubelet refused the apiserver's own kubelet-client identity (" + user + ") — not yours: the apiserver " +
				"let you through. That identity needs nodes/proxy; kubeadm binds it to system:kubelet-api-admin: " +
				"kubectl create clusterrolebinding kubeadm:apiserver-kubelet-client --clusterrole=system:kubelet-api-admin " + subject
		case code >= 300 && code < 400:
			e.Hint = "The kubelet (or what answers the apiserver at the node's address) redirects, and the apiserver's node " +
				"proxy passes that on; a kubelet's /pods never does, and the client does not follow: your kubeconfig's " +
				"credentials would go with it."
		default:
			e.Hint = "The kubelet answered the apiserver with an error; its own words are quoted above."
		}
		return e
	}
	switch {
	case apierrors.IsForbidden(err):
		e.Kind, e.Party = Forbidden, PartyClient
		user := ""
		if m := apiserverForbidden.FindStringSubmatch(err.Error()); m != nil {
			user = m[1]
		}
		e.Hint = "The apiserver's node proxy needs get on nodes/proxy (not nodes/pods), which examples/rbac keeps apart: " +
			grantHint(user, "get nodes/proxy")
	case apierrors.IsUnauthorized(err):
		e.Kind, e.Party = Unauthorized, PartyClient
		e.Hint = "The apiserver did not accept the kubeconfig's credentials."
	case apierrors.IsNotFound(err):
		e.Hint = "There is no node " + node + ": kubectl get nodes lists them."
	}
	return e
}

// apiserverForbidden is the user in the apiserver's own 403: User "U" cannot get resource "nodes/proxy" ….
var apiserverForbidden = regexp.MustCompile(`User "([^"]*)" cannot`)

// forbiddenHint says what to grant after a kubelet's 403, and how. The kubelet's body names the
// user and every permission it asked the apiserver about, narrowest first
// (pkg/kubelet/server/server.go#L426 (Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v))):
// the hint grants the first, through grantHint, so that it names a role that really grants it.
func forbiddenHint(body, permission string) string {
	m := forbiddenBody.FindStringSubmatch(body)
	if m == nil {
		if permission == "" {
			permission = kubeletclient.ReadEndpoints["pods"].Permission
		}
		return "Authenticated, but not allowed. Grant " + permission + ": " + grantHint("", permission)
	}
	user, verb := m[1], m[2]
	var asked []string
	for _, sub := range strings.Fields(m[4]) {
		asked = append(asked, m[3]+"/"+sub)
	}
	if len(asked) == 0 || !apiWord.MatchString(verb) || !apiWord.MatchString(m[3]) || !apiWord.MatchString(strings.ReplaceAll(m[4], " ", "")) {
		// Not the kubelet's words: nothing of it goes into a command.
		return "Authenticated, but not allowed: " + kubeletclient.Printable(m[0], false)
	}
	shownUser := kubeletclient.Printable(user, false)
	narrow := verb + " " + asked[0]
	if len(asked) == 1 {
		hint := fmt.Sprintf("%s may not %s %s, the one permission the kubelet asked the apiserver for. Grant %s: %s",
			shownUser, verb, asked[0], narrow, grantHint(user, narrow))
		if asked[0] == "nodes/proxy" && permission != "" && permission != narrow {
			hint += fmt.Sprintf(". (A kubelet of v1.33 or later, with KubeletFineGrainedAuthz, asks for %s first: "+
				"this one is older or has the gate off.)", permission)
		}
		return hint
	}
	return fmt.Sprintf("%s may not %s %s — the kubelet asked the apiserver for each, in this order (v1.37 checks %s "+
		"before nodes/proxy). Grant %s, the narrower one: %s", shownUser, verb, strings.Join(asked, " nor "), asked[0], narrow, grantHint(user, narrow))
}

// apiWord is a verb, resource or subresource as Kubernetes writes them: what a kubelet's 403
// names, and all of it that forbiddenHint lets into a command.
var apiWord = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// relayedFromKubelet says whether an error of the node proxy is an answer that is not the
// apiserver's own JSON Status — the kubelet's plain text, relayed — and returns its code and text.
func relayedFromKubelet(err error) (code int, text string, relayed bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return 0, "", false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Type == metav1.CauseTypeUnexpectedServerResponse {
			return int(status.Status().Code), cause.Message, true
		}
	}
	return 0, "", false
}

// errUnsafeArgument says a server's text was not made into a command argument.
var errUnsafeArgument = errors.New("holds control characters or invalid UTF-8")

// ShellQuote writes s as one argument of a POSIX shell command: as it is when it holds only
// characters no shell treats specially, else in single quotes (a ' inside written '"'"'). Text
// with control characters or invalid UTF-8 is refused: quoted, it would still print as
// something else on a terminal, and a reader could not see what they were pasting.
func ShellQuote(s string) (string, error) {
	if kubeletclient.Printable(s, false) != s {
		return "", errUnsafeArgument
	}
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+:,./_-") == "" {
		return s, nil
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'", nil
}

// quoteArgs is args quoted for a shell (ShellQuote) and joined with spaces; ok is false when
// one of them is refused, and then the command must not be printed.
func quoteArgs(args ...string) (quoted string, ok bool) {
	out := make([]string, len(args))
	for i, a := range args {
		q, err := ShellQuote(a)
		if err != nil {
			return "", false
		}
		out[i] = q
	}
	return strings.Join(out, " "), true
}
