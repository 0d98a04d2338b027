package client

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/pki"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// Every way a request to a real kubelet can go, and what the client says about it.
func TestAgainstStandaloneKubelet(t *testing.T) {
	s := startStandalone(t)
	// A kubelet as minikube's: a certificate it signed itself, for its hostname only.
	reviewClient, err := s.reviews.Client()
	require.NoError(t, err)
	selfSigned, err := realkubelet.Start(context.Background(), realkubelet.Options{NodeName: "self-signed", StaticPodPath: repo.Path("examples", "static-pods"), ReadOnlyPort: -1, Webhook: true, AuthClient: reviewClient})
	require.NoError(t, err)
	t.Cleanup(selfSigned.Stop)
	otherCA, err := pki.NewCA("not-the-kubelets-ca")
	require.NoError(t, err)
	otherCAFile, err := otherCA.WriteCA(t.TempDir(), "other")
	require.NoError(t, err)

	tests := []struct {
		name      string
		url       string
		opts      kubeletclient.Options
		wantKind  agent.Kind // empty: success
		wantHint  string
		wantProto string
	}{
		// A kubelet with a client CA file answers HTTP/1.1 only: its TLS configuration comes from
		// the client-CA reloader (GetConfigForClient), which does not carry net/http's "h2".
		{"token, allowed: HTTP/1.1 from a kubelet with a client CA", s.kubelet.SecureURL, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["reader"], KubeletCAFile: s.caFile}, "", "", "HTTP/1.1"},
		{"token, allowed, --http1", s.kubelet.SecureURL, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["reader"], KubeletCAFile: s.caFile, HTTP1: true}, "", "", "HTTP/1.1"},
		{"garbage token: 401", s.kubelet.SecureURL, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["garbage"], KubeletCAFile: s.caFile},
			agent.Unauthorized, "must pass the apiserver's TokenReview", ""},
		{"valid token, no RBAC: 403 names both permissions", s.kubelet.SecureURL, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["nobody"], KubeletCAFile: s.caFile},
			agent.Forbidden, "system:serviceaccount:e2e:nobody may not get nodes/pods nor nodes/proxy", ""},
		{"a CA that did not sign the kubelet's certificate", s.kubelet.SecureURL, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["reader"], KubeletCAFile: otherCAFile},
			agent.TLS, "each kubelet signs its own certificate at start", ""},
		{"minikube's case: self-signed, no IP SAN", selfSigned.SecureURL, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["reader"], KubeletCAFile: selfSigned.ServingCertFile},
			agent.TLS, "The kubelet's certificate is not valid for 127.0.0.1", ""},
		{"--insecure-skip-tls-verify, and --allow-credentials-to-unverified-kubelet, reach it anyway", selfSigned.SecureURL, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["reader"], InsecureSkipTLSVerify: true, AllowCredentialsToUnverifiedKubelet: true}, "", "", "HTTP/2.0"},
		{"read-only port disabled: refused", "http://" + closedPort(t), kubeletclient.Options{Auth: kubeletclient.AuthNone},
			agent.Refused, "If this is the read-only port 10255, it is off by default", ""},
		// The blackhole accepts the connection and never answers: the timeout only has to outlast
		// the TCP connection on a loaded machine for the client to say it was connected.
		{"no answer: timeout", "https://" + blackhole(t), kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["reader"], KubeletCAFile: s.caFile, Timeout: 2 * time.Second},
			agent.Timeout, "accepted the connection but did not answer in time (--request-timeout)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.ServiceAccountDir = t.TempDir() // never this machine's /var/run/secrets
			c, err := kubeletclient.New(nil, tt.opts)
			require.NoError(t, err)
			r := c.FetchURL(context.Background(), tt.url)
			if tt.wantKind == "" {
				require.EventuallyWithT(t, func(ct *assert.CollectT) { // the kubelet may still be reading its manifests
					r = c.FetchURL(context.Background(), tt.url)
					require.NoError(ct, r.Err)
					assert.Len(ct, r.Pods, 5)
				}, 30*time.Second, 50*time.Millisecond)
				assert.Equal(t, tt.wantProto, r.Protocol)
				return
			}
			var e *agent.Error
			require.True(t, errors.As(agent.Explain(context.Background(), c, r.Err), &e), "%v", r.Err)
			assert.Equal(t, tt.wantKind, e.Kind)
			assert.Contains(t, e.Hint, tt.wantHint)
			if tt.wantKind == agent.Timeout {
				assert.Contains(t, e.Error(), "timed out after 2s waiting for")
			}
		})
	}
}

// The token is never printed, not even at -v=10 where client-go logs every request: the
// production client (examples/kubelet-pods) runs against a real kubelet, and its whole output is searched.
func TestTokenNeverLogged(t *testing.T) {
	s := startStandalone(t)
	token, err := readFile(s.tokens["reader"])
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "client")
	build := exec.Command("go", "build", "-o", bin, "github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var output []byte
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cmd := exec.Command(bin, "--kubelet-url", s.kubelet.SecureURL, "--auth=token", "--token-file", s.tokens["reader"],
			"--kubelet-ca-file", s.caFile, "-v=10")
		var err error
		output, err = cmd.CombinedOutput()
		require.NoError(c, err, "%s", output)
		assert.Contains(c, string(output), "web-e2e-node")
	}, 30*time.Second, 100*time.Millisecond)
	assert.Contains(t, string(output), "Authorization: Bearer <masked>", "at -v=10 client-go logs the request headers, masked")
	assert.NotContains(t, string(output), token)
	assert.NotContains(t, string(output), token[:16])
}
