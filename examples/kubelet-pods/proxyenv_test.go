package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
)

// rawListener records the bytes each connection brings, and answers 502: a stand-in for an
// HTTP proxy, or for whatever listens at a kubelet's address, that sees what arrives in clear.
type rawListener struct {
	addr string
	mu   sync.Mutex
	got  [][]byte
}

func newRawListener(t *testing.T) *rawListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	r := &rawListener{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				_ = conn.SetDeadline(time.Now().Add(30 * time.Second)) // a request on a loaded machine; it ends at its blank line
				var buf bytes.Buffer
				chunk := make([]byte, 4096)
				for !bytes.Contains(buf.Bytes(), []byte("\r\n\r\n")) {
					n, err := conn.Read(chunk)
					buf.Write(chunk[:n])
					if err != nil {
						break
					}
				}
				r.mu.Lock()
				r.got = append(r.got, buf.Bytes())
				r.mu.Unlock()
				_, _ = io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
			}()
		}
	}()
	return r
}

func (r *rawListener) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = nil
}

func (r *rawListener) received() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(bytes.Join(r.got, []byte("\n")))
}

// With HTTPS_PROXY set, client-go's transport dials the proxy (http.ProxyFromEnvironment) and
// sends it CONNECT with the proxy's credentials. --kubelet-tls-server-name makes the client name
// the kubelet by its certificate's name and dial its address: that must replace the kubelet's
// address only, never the proxy's, or the CONNECT and its Proxy-Authorization go in clear to
// whatever listens at the kubelet's address. (A subprocess: net/http reads the proxy
// environment once per process.)
func TestProxyCredentialsGoOnlyToTheProxy(t *testing.T) {
	bin := builtClient(t)
	e := newEnv(t)
	const proxyPassword = "proxy-password-0123456789"
	proxyAuth := base64.StdEncoding.EncodeToString([]byte("agent:" + proxyPassword))
	kubelet := newRawListener(t)
	_, port, err := net.SplitHostPort(kubelet.addr)
	require.NoError(t, err)
	portNumber, err := strconv.Atoi(port)
	require.NoError(t, err)
	kubeconfig := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	e.apiserver.SetNodes(fakecluster.Node("n1", portNumber, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "kubelet.test"}))

	// A literal name is the TLS configuration's: the URL keeps the node's address, 127.0.0.1
	// here, which net/http never sends through a proxy. A name read from the Node goes into the
	// URL, and the proxy is asked for it.
	tests := []struct {
		name    string
		args    []string
		connect string
	}{
		{"--node, a literal name", []string{"--kubeconfig", kubeconfig, "--node", "n1", "--via=kubelet", "--kubelet-tls-server-name=kubelet.test", "--auth=none"}, ""},
		{"--node, the Node's Hostname", []string{"--kubeconfig", kubeconfig, "--node", "n1", "--via=kubelet", "--kubelet-tls-server-name=Hostname", "--auth=none"}, "CONNECT kubelet.test:" + port},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := newRawListener(t)
			kubelet.reset()
			cmd := exec.Command(bin, append(tt.args, "-v=10", "--service-account-dir", e.serviceAccountDir)...)
			cmd.Env = []string{"HOME=" + t.TempDir(), "KUBECONFIG=", "KUBERNETES_SERVICE_HOST=", "PATH=" + os.Getenv("PATH"),
				"HTTPS_PROXY=http://agent:" + proxyPassword + "@" + proxy.addr, "NO_PROXY="}
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "%s", out)
			assert.NotContains(t, kubelet.received(), "Proxy-Authorization", "the kubelet's address must not get the proxy's CONNECT")
			assert.NotContains(t, kubelet.received(), proxyAuth)
			if tt.connect == "" {
				assert.Empty(t, proxy.received(), "loopback is not proxied")
			} else {
				assert.Contains(t, proxy.received(), tt.connect, "the proxy is asked for the name the certificate is checked for")
				assert.Contains(t, proxy.received(), "Proxy-Authorization: Basic "+proxyAuth)
			}
			assert.NotContains(t, string(out), proxyPassword)
			assert.NotContains(t, string(out), proxyAuth)
		})
	}
}
