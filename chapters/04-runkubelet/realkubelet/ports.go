package realkubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// handedOut remembers every port given to a kubelet of this process: the kubelet calls
// os.Exit(1) when its listen fails, so two kubelets must never be given the same port.
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// choosePort returns want when it is positive, 0 (disabled) when it is negative, and a free
// port on host, not handed out before in this process, when it is 0.
func choosePort(host string, want int) (int, error) {
	switch {
	case want > 0:
		return want, nil
	case want < 0:
		return 0, nil
	}
	portsMu.Lock()
	defer portsMu.Unlock()
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
