package checks

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// The checker reads /pods through the node proxy with the kubeconfig's credentials. The proxy
// passes a kubelet's redirect on, and client-go's transport adds the credentials to a
// redirected request too: the checker follows none, and reads no answer without end.
func TestRawFollowsNoRedirectAndIsBounded(t *testing.T) {
	var stolen atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { stolen.Add(1) }))
	t.Cleanup(target.Close)
	huge := strings.Repeat("x", 1<<20)
	apiserver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/api/v1/nodes/redirects/proxy/pods":
			http.Redirect(w, req, target.URL+"/pods", http.StatusFound)
		default: // an answer without end
			for req.Context().Err() == nil {
				if _, err := w.Write([]byte(huge)); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(apiserver.Close)
	env := Env{Config: &rest.Config{Host: apiserver.URL, BearerToken: "kubeconfig-secret",
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiserver.Certificate().Raw})}}}

	_, err := env.raw(context.Background(), "/api/v1/nodes/redirects/proxy/pods")
	require.Error(t, err, "a redirect is not the kubelet's /pods")
	assert.Zero(t, stolen.Load(), "the redirect's target got nothing")

	_, err = env.raw(context.Background(), "/api/v1/nodes/endless/proxy/pods")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is longer than 67108864 bytes")
}

func TestReadLogBounded(t *testing.T) {
	data, err := readLog(strings.NewReader("NODE NAMESPACE NAME\n"))
	require.NoError(t, err)
	assert.Equal(t, "NODE NAMESPACE NAME\n", string(data))
	_, err = readLog(strings.NewReader(strings.Repeat("x", maxLog+1)))
	assert.EqualError(t, err, "the pod's last 40 log lines are longer than 1048576 bytes: not read")
}
