package kubeletclient_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
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

// Two nodes' kubelets on one port at two addresses, their certificates for one name: each
// node's pods are its own kubelet's. The transport pools connections by the URL's host, so a
// name in the URL for both would have had the second request reuse the first's connection.
func TestTLSServerNameKeepsNodesApart(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	first := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "kubelet"), Address: "127.0.0.2:0",
		Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "on-n1"}}}})
	second := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "kubelet"), Address: fmt.Sprintf("127.0.0.3:%d", first.Port),
		Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "on-n2"}}}})
	node := func(name, ip, hostname string) corev1.Node {
		n := fakecluster.Node(name, first.Port, corev1.NodeAddress{Type: corev1.NodeHostName, Address: hostname})
		n.Status.Addresses[0].Address = ip
		return n
	}
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}}

	tests := []struct {
		name, serverName string
		hostnames        [2]string
		want             [2]string // each node's pod, or its error
	}{
		{"a literal name", "kubelet", [2]string{"n1-host", "n2-host"}, [2]string{"on-n1", "on-n2"}},
		{"each Node's hostname, one name for both", "Hostname", [2]string{"kubelet", "kubelet"},
			[2]string{"on-n1", "both give kubelet as their Hostname: one name cannot stand for two connections"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.SetNodes(node("n1", "127.0.0.2", tt.hostnames[0]), node("n2", "127.0.0.3", tt.hostnames[1]))
			first.Reset()
			second.Reset()
			opts := options(p, t)
			opts.TLSServerName = tt.serverName
			c, err := kubeletclient.New(cfg, opts)
			require.NoError(t, err)
			for i, n := range []string{"n1", "n2"} {
				r := c.Pods(context.Background(), n)
				if !strings.HasPrefix(tt.want[i], "on-") {
					require.Error(t, r.Err)
					assert.Contains(t, r.Err.Error(), tt.want[i])
					continue
				}
				require.NoError(t, r.Err)
				require.Len(t, r.Pods, 1)
				assert.Equal(t, tt.want[i], r.Pods[0].Name, "node %s", n)
			}
			assert.Len(t, first.Requests(), 1)
		})
	}
}
