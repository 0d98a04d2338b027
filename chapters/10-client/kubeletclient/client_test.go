package kubeletclient_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/10-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
)

func options(p *fakecluster.PKI, t *testing.T) kubeletclient.Options {
	return kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: fakecluster.TokenFile(t, "reader-token"),
		ServiceAccountDir: t.TempDir(), Via: kubeletclient.ViaKubelet}
}

// --kubelet-tls-server-name: dial the InternalIP, check the certificate against the Node's
// hostname — minikube's hostname-only certificate, verified, without /etc/hosts.
func TestTLSServerName(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	k := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "node-host")}) // no IP SAN
	a.SetNodes(fakecluster.Node("n1", k.Port, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-host"}))
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}}

	dialed := fmt.Sprintf("https://127.0.0.1:%d/pods", k.Port)
	tests := []struct {
		serverName string
		wantErr    string
	}{
		{"", `Get "` + dialed + `": tls: failed to verify certificate: x509: cannot validate certificate for 127.0.0.1`},
		{"Hostname", ""},
		{"hostname", ""},
		{"node-host", ""},
		{"InternalDNS", "node n1 has no InternalDNS address"},
		// The URL dialed, and the name checked — not a URL with a host nobody dialed.
		{"other-host", `Get "` + dialed + `" (certificate checked for other-host): tls: failed to verify certificate: x509: certificate is valid for node-host, not other-host`},
	}
	for _, tt := range tests {
		t.Run(tt.serverName, func(t *testing.T) {
			opts := options(p, t)
			opts.TLSServerName = tt.serverName
			c, err := kubeletclient.New(cfg, opts)
			require.NoError(t, err)
			k.Reset()
			r := c.Pods(context.Background(), "n1")
			if tt.wantErr != "" {
				require.Error(t, r.Err)
				assert.Contains(t, r.Err.Error(), tt.wantErr)
				assert.NotContains(t, r.Err.Error(), "https://other-host", "a URL nobody dialed")
				return
			}
			require.NoError(t, r.Err)
			assert.Equal(t, "node-host", r.ServerName)
			assert.True(t, strings.HasPrefix(r.URL, "https://127.0.0.1:"), "the address dialed is the InternalIP: %s", r.URL)
			assert.Equal(t, []string{"Bearer reader-token"}, func() (out []string) {
				for _, req := range k.Requests() {
					out = append(out, req.Authorization)
				}
				return
			}())
		})
	}
}
