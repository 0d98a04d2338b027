package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
)

// The apiserver's node proxy passes a kubelet's redirect on to the client (to another host
// unchanged: k8s.io/apimachinery/pkg/util/proxy/transport.go, rewriteURL), and client-go adds
// the kubeconfig's credentials to every request its transport sends, a redirected one too. A
// kubelet — or whatever answers the apiserver at the node's address — must not get the user's
// credentials that way: the client does not follow the proxy's redirects.
func TestProxyRedirectsNotFollowed(t *testing.T) {
	e := newEnv(t)
	certFile, keyFile := e.pki.ClientCert(t, "the-user")
	withToken := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	withBasic := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Username: "u", Password: basicPassword})
	withCert := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{CertFile: certFile, KeyFile: keyFile})
	// A Node whose kubelet cannot be reached: --via=auto falls back to the proxy.
	closed := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{})
	closed.Server.Close() // nothing listens on its port any more
	e.apiserver.SetNodes(fakecluster.Node("n1", e.kubelet.Port), fakecluster.Node("n2", closed.Port))

	tests := []struct {
		name       string
		kubeconfig string
		node, via  string
		to         *fakecluster.Kubelet // where the kubelet redirects
	}{
		{"--via=apiserver, a token, to http:// elsewhere", withToken, "n1", "apiserver", e.plain},
		{"--via=apiserver, a token, to an https:// kubelet", withToken, "n1", "apiserver", e.kubelet},
		{"--via=apiserver, basic auth, to http:// elsewhere", withBasic, "n1", "apiserver", e.plain},
		{"--via=apiserver, a client certificate, to an https:// kubelet", withCert, "n1", "apiserver", e.kubelet},
		{"--via=auto fell back, a token, to http:// elsewhere", withToken, "n2", "auto", e.plain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.apiserver.Proxy(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.to.URL+"/pods", http.StatusFound)
			})
			e.plain.Reset()
			e.kubelet.Reset()
			e.apiserver.Reset()
			_, stderr, err := e.run(t, "--kubeconfig", tt.kubeconfig, "--node", tt.node, "--via", tt.via)
			assert.Empty(t, tt.to.Requests(), "the redirect's target must receive nothing")
			require.Error(t, err, "a redirect is not an answer")
			assert.Contains(t, err.Error(), "redirects")
			assert.Contains(t, err.Error(), "the client does not follow")
			for _, secret := range []string{kubeconfigToken, basicPassword} {
				assert.NotContains(t, stderr+err.Error(), secret)
			}
			for _, req := range e.apiserver.Requests() {
				if strings.Contains(req.Path, "/proxy/") {
					assert.NotContains(t, req.Authorization, mintedToken, "the proxy gets the kubeconfig's credentials, not the kubelet's token")
				}
			}
		})
	}
}
