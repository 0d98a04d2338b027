package pki

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIssueAndVerify(t *testing.T) {
	ca, err := NewCA("test-ca")
	require.NoError(t, err)
	tests := []struct {
		name  string
		req   Request
		usage x509.ExtKeyUsage
		check func(t *testing.T, c *x509.Certificate)
	}{
		{"node client", Request{CommonName: "system:node:n1", Organizations: []string{"system:nodes"}, Client: true}, x509.ExtKeyUsageClientAuth,
			func(t *testing.T, c *x509.Certificate) {
				assert.Equal(t, "system:node:n1", c.Subject.CommonName)
				assert.Equal(t, []string{"system:nodes"}, c.Subject.Organization)
			}},
		{"serving", Request{CommonName: "kubelet", IPs: []net.IP{net.ParseIP("10.200.0.1")}, DNSNames: []string{"n1"}, Server: true}, x509.ExtKeyUsageServerAuth,
			func(t *testing.T, c *x509.Certificate) {
				require.NoError(t, c.VerifyHostname("10.200.0.1"))
				require.NoError(t, c.VerifyHostname("n1"))
				assert.Error(t, c.VerifyHostname("127.0.0.1"))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := ca.Issue(tt.req)
			require.NoError(t, err)
			block, _ := pem.Decode(pair.CertPEM)
			require.NotNil(t, block)
			cert, err := x509.ParseCertificate(block.Bytes)
			require.NoError(t, err)
			_, err = cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{tt.usage}})
			require.NoError(t, err)
			tt.check(t, cert)
			_, err = pair.TLSCertificate()
			require.NoError(t, err)

			dir := t.TempDir()
			certFile, keyFile, err := pair.Write(dir, "x")
			require.NoError(t, err)
			info, err := os.Stat(keyFile)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "keys are private")
			assert.FileExists(t, certFile)
		})
	}
}
