package kubeletclient

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The library itself holds the rules for what reaches a kubelet, for whoever lifts it into an
// agent without the tool's command: a token goes only over HTTPS to a kubelet whose
// certificate is checked — or unchecked when that was asked for by name — and never follows a
// redirect. Each case is a loopback kubelet that records the Authorization it receives.
func TestKubeletGetsCredentialsOnlyWhereItMay(t *testing.T) {
	const secret = "kubelet-token-secret"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(secret), 0o600))
	pods := func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
	}
	caFile := func(r *recorder) string {
		f := filepath.Join(t.TempDir(), "ca.crt")
		require.NoError(t, os.WriteFile(f, certPEM(r.Server), 0o600))
		return f
	}
	// The pod's ServiceAccount directory is the test's: no CA comes from the machine.
	token := Options{Auth: AuthToken, TokenFile: tokenFile, Via: ViaKubelet, ServiceAccountDir: dir}

	tests := []struct {
		name string
		// kubelet answers; opts is given the kubelet (its CA, for one).
		kubelet func(t *testing.T) *recorder
		opts    func(k *recorder) Options
		// wantErr, when set, is in the error; want is what the kubelet received.
		wantErr string
		want    []string
	}{
		{name: "a token over plain http: refused before anything is sent",
			kubelet: func(t *testing.T) *recorder { return newRecorder(t, false, pods) },
			opts:    func(*recorder) Options { return token },
			wantErr: "refusing to send bearer token from " + tokenFile + " over plain http://"},
		{name: "no credentials over plain http (the read-only port): sent, without Authorization",
			kubelet: func(t *testing.T) *recorder { return newRecorder(t, false, pods) },
			opts:    func(*recorder) Options { return Options{Auth: AuthNone, Via: ViaKubelet, ServiceAccountDir: dir} },
			want:    []string{"GET /pods "}},
		{name: "a certificate no CA given vouches for: the handshake fails, no request",
			kubelet: func(t *testing.T) *recorder { return newRecorder(t, true, pods) },
			opts:    func(*recorder) Options { return token },
			wantErr: "certificate signed by unknown authority"},
		{name: "the kubelet's CA: the token is delivered",
			kubelet: func(t *testing.T) *recorder { return newRecorder(t, true, pods) },
			opts: func(k *recorder) Options {
				o := token
				o.KubeletCAFile = caFile(k)
				return o
			},
			want: []string{"GET /pods Bearer " + secret}},
		{name: "unverified, asked for by name: the token is delivered there",
			kubelet: func(t *testing.T) *recorder { return newRecorder(t, true, pods) },
			opts: func(*recorder) Options {
				o := token
				o.InsecureSkipTLSVerify, o.AllowCredentialsToUnverifiedKubelet = true, true
				return o
			},
			want: []string{"GET /pods Bearer " + secret}},
		{name: "unverified, anonymous: sent without Authorization",
			kubelet: func(t *testing.T) *recorder { return newRecorder(t, true, pods) },
			opts: func(*recorder) Options {
				return Options{Auth: AuthNone, InsecureSkipTLSVerify: true, Via: ViaKubelet, ServiceAccountDir: dir}
			},
			want: []string{"GET /pods "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.kubelet(t)
			c, err := New(nil, tt.opts(k))
			require.NoError(t, err)
			r := c.FetchURL(context.Background(), k.URL)
			if tt.wantErr != "" {
				require.Error(t, r.Err)
				assert.Contains(t, r.Err.Error(), tt.wantErr)
				assert.NotContains(t, r.Err.Error(), secret)
			} else {
				require.NoError(t, r.Err)
			}
			assert.Equal(t, tt.want, k.requests())
		})
	}

	t.Run("a token to an unverified kubelet, not asked for: New refuses", func(t *testing.T) {
		o := token
		o.InsecureSkipTLSVerify = true
		_, err := New(nil, o)
		var refused *CredentialsRefusedError
		require.ErrorAs(t, err, &refused)
		assert.Contains(t, err.Error(), "whose certificate is not checked")
	})

	// A redirect is an answer, never followed: the token stays with the kubelet it was meant for.
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run("a redirect is not followed: "+http.StatusText(code), func(t *testing.T) {
			elsewhere := newRecorder(t, true, pods)
			k := newRecorder(t, true, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/pods", code)
			})
			o := token
			o.KubeletCAFile = caFile(k) // httptest's servers share one certificate: elsewhere is trusted too
			c, err := New(nil, o)
			require.NoError(t, err)
			r := c.FetchURL(context.Background(), k.URL)
			var rerr *RequestError
			require.True(t, errors.As(r.Err, &rerr), "%v", r.Err)
			assert.Equal(t, code, rerr.StatusCode)
			assert.Equal(t, elsewhere.URL+"/pods", rerr.Location)
			assert.Equal(t, []string{"GET /pods Bearer " + secret}, k.requests())
			assert.Empty(t, elsewhere.requests())
			assert.False(t, strings.Contains(r.Err.Error(), secret))
		})
	}
}
