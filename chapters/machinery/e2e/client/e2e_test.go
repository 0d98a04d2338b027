// Package client tests the kubelet client against real kubelets: standalone ones with the real
// app.BuildAuth wired to a review server (authentication, authorization and TLS failures), and
// the mini-cluster's, inside a private network namespace (discovery, ServiceAccount tokens,
// examples/rbac, the node proxy and failover).
package client

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/pki"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/reviewserver"
)

// noNetns says why the mini-cluster tests cannot run, when no private network namespace could be made.
var noNetns error

func TestMain(m *testing.M) {
	if ran, code, err := netns.RunInside(); ran {
		os.Exit(code)
	} else if err != nil {
		noNetns = fmt.Errorf("no private network namespace could be made (%w)", err)
	}
	_, closeLog, err := kubeletlog.ToFile("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	closeLog()
	if clusterStarted {
		cluster.Stop()
	}
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}

// standalone is a real kubelet on loopback as a kubeadm node is configured: HTTPS with a
// certificate for 127.0.0.1 signed by ca, no anonymous access, TokenReview and
// SubjectAccessReview answered by reviews.
type standalone struct {
	ca      *pki.CA
	caFile  string
	kubelet *realkubelet.Kubelet
	reviews *reviewserver.Server
	tokens  map[string]string // user → token file
	dir     string
}

func startStandalone(t testing.TB) *standalone {
	t.Helper()
	s := newCredentials(t)
	reviewClient, err := s.reviews.Client()
	require.NoError(t, err)
	s.kubelet, err = realkubelet.Start(context.Background(), realkubelet.Options{
		NodeName: "e2e-node", StaticPodPath: repo.Path("examples", "static-pods"), ReadOnlyPort: -1,
		TLSCertFile: filepath.Join(s.dir, "serving.crt"), TLSKeyFile: filepath.Join(s.dir, "serving.key"),
		ClientCAFile: s.caFile, Webhook: true, AuthClient: reviewClient,
	})
	require.NoError(t, err)
	t.Cleanup(s.kubelet.Stop)
	return s
}

// newCredentials makes the CA, the kubelet's serving certificate (serving.crt/.key in s.dir),
// token files for the users reader (may get nodes/pods), all-reads (each read endpoint's narrow
// permission), nobody and garbage, and the review
// server that knows them — without a kubelet.
func newCredentials(t testing.TB) *standalone {
	t.Helper()
	s := &standalone{dir: t.TempDir(), tokens: map[string]string{}}
	var err error
	s.ca, err = pki.NewCA("e2e-ca")
	require.NoError(t, err)
	s.caFile, err = s.ca.WriteCA(s.dir, "ca")
	require.NoError(t, err)
	serving, err := s.ca.Issue(pki.Request{CommonName: "e2e-node", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	require.NoError(t, err)
	_, _, err = serving.Write(s.dir, "serving")
	require.NoError(t, err)

	users := map[string]authenticationv1.UserInfo{}
	for _, name := range []string{"reader", "nobody", "all-reads"} {
		token := "token-of-" + name + "-0123456789abcdef"
		users[token] = authenticationv1.UserInfo{Username: "system:serviceaccount:e2e:" + name}
		s.tokens[name] = filepath.Join(s.dir, name+".token")
		require.NoError(t, os.WriteFile(s.tokens[name], []byte(token), 0o600))
	}
	s.tokens["garbage"] = filepath.Join(s.dir, "garbage.token")
	require.NoError(t, os.WriteFile(s.tokens["garbage"], []byte("not-a-token"), 0o600))
	s.reviews = reviewserver.Start(users, map[string][]string{
		"system:serviceaccount:e2e:reader":    {"get nodes/pods"},
		"system:serviceaccount:e2e:all-reads": {"get nodes/pods", "get nodes/stats", "get nodes/metrics", "get nodes/configz", "get nodes/healthz"},
	})
	t.Cleanup(s.reviews.Close)
	return s
}

// blackhole accepts connections and never answers: a kubelet behind a dropped route.
func blackhole(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	return l.Addr().String()
}

// closedPort is a loopback port nothing listens on.
func closedPort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
