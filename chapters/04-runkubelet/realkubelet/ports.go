package realkubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
)

// handedOut remembers every port given to a kubelet of this process: the kubelet calls
// os.Exit(1) when its listen fails, so two kubelets must never be given the same port.
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// choosePort returns want when it is positive and free on host, 0 (disabled) when it is
// negative, and a free port on host, not handed out before in this process, when it is 0. A
// port asked for is tried here, because the kubelet would end the process on it: a port in
// use, or one this process may not bind, is an error naming the port and the address.
func choosePort(host, name string, want int) (int, error) {
	if want < 0 {
		return 0, nil
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	if want > 0 {
		if handedOut[want] {
			return 0, fmt.Errorf("the kubelet's %s %d on %s: given to another kubelet of this process already", name, want, host)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(want)))
		if err != nil {
			return 0, fmt.Errorf("the kubelet's %s: %w", name, err)
		}
		_ = l.Close()
		handedOut[want] = true
		return want, nil
	}
	for range 100 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port on %s: %w", host, err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut[port] {
			handedOut[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("find a free port on %s: every port offered was taken", host)
}

// chooseSecurePort is choosePort for the HTTPS server, which runs only with Webhook: it serves
// /logs/, /debug/pprof and PUT /debug/flags/v to whoever its filter lets in.
func chooseSecurePort(opts Options) (int, error) {
	if !opts.Webhook {
		if opts.SecurePort > 0 {
			return 0, fmt.Errorf("secure port %d: the kubelet's HTTPS server serves /logs/ and /debug/ to whoever it lets in, so it runs only with Webhook (TokenReview and SubjectAccessReview, anonymous refused)", opts.SecurePort)
		}
		return 0, nil
	}
	return choosePort(opts.Address, "secure port", opts.SecurePort)
}

// checkSecureServer refuses a configuration, Options.Configure's last word included, whose
// HTTPS server would let anyone in: anonymous requests allowed, or authorization AlwaysAllow.
func checkSecureServer(config *kubeletconfig.KubeletConfiguration) error {
	if !config.EnableServer {
		return nil
	}
	if config.Authentication.Anonymous.Enabled {
		return fmt.Errorf("secure port %d: anonymous requests would reach /logs/ and /debug/: keep authentication.anonymous.enabled false", config.Port)
	}
	if config.Authorization.Mode != kubeletconfig.KubeletAuthorizationModeWebhook {
		return fmt.Errorf("secure port %d: authorization %s would let every authenticated caller reach /logs/ and /debug/: use Webhook", config.Port, config.Authorization.Mode)
	}
	return nil
}

// waitListening returns once addr accepts connections, or when ctx ends. On a TLS port it
// completes a handshake, so that the server does not log an aborted one. The probe only asks
// whether the port answers; it verifies nothing and sends no request.
func waitListening(ctx context.Context, addr string, useTLS bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil && useTLS {
			tlsConn := tls.Client(conn, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a readiness probe, no data sent
			err = tlsConn.HandshakeContext(ctx)
			conn = tlsConn
		}
		if err == nil {
			return conn.Close()
		}
		if conn != nil {
			_ = conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubelet did not listen on %s: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// get fetches url and returns its body, or an error naming the status.
func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, nil
}
