package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/podtable"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
)

// A ServiceAccount that is not a name the apiserver would accept is refused at the flag, before
// any request: it would become a path of the TokenRequest.
func TestServiceAccountFlagChecked(t *testing.T) {
	e := newEnv(t)
	kubeconfig := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	tests := []struct {
		account string
		want    string
	}{
		{"../x", `--service-account "../x": the namespace ".." is not a namespace's name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"a/b", ""},
		{"kubelet-reader/../x", `--service-account "kubelet-reader/../x": "../x" is not a ServiceAccount's name: `},
		{"ns/a/b", `--service-account "ns/a/b": "a/b" is not a ServiceAccount's name: `},
	}
	for _, tt := range tests {
		t.Run(tt.account, func(t *testing.T) {
			e.apiserver.Reset()
			_, _, err := e.run(t, "--kubeconfig", kubeconfig, "--node", "n1", "--service-account", tt.account)
			if tt.want == "" { // valid, and no such ServiceAccount: the apiserver is asked
				require.Error(t, err)
				assert.Contains(t, err.Error(), "could not get a token for the ServiceAccount a/b")
				assert.NotEmpty(t, e.apiserver.Requests())
				return
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "%s\ndoes not start with\n%s", err, tt.want)
			assert.Empty(t, e.apiserver.Requests(), "nothing was asked")

			// The flag's own error, first: with no kubeconfig at all, too.
			_, _, err = e.run(t, "--node", "n1", "--service-account", tt.account)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "%s\ndoes not start with\n%s", err, tt.want)
		})
	}
}

// What a kubelet says reaches the terminal without control characters: the pod table, --watch's
// lines, an endpoint's answer printed as the kubelet wrote it, and its error bodies.
func TestServerTextPrintable(t *testing.T) {
	evil := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web\x1b[2J\x1b]0;owned\x07", Namespace: "default\r", UID: "u1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Reason: "\x1b[31mred"}}

	t.Run("table and name", func(t *testing.T) {
		e := newEnv(t, evil)
		kubeconfig := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
		for _, output := range []string{"table", "wide", "name"} {
			stdout, stderr, err := e.run(t, "--kubeconfig", kubeconfig, "--node", "n1", "-o", output)
			require.NoError(t, err, stderr)
			assert.Contains(t, stdout, `web\x1b[2J\x1b]0;owned\a`, output)
			assert.NotContains(t, stdout, "\x1b", output)
			assert.NotContains(t, stdout, "\x07", output)
			assert.NotContains(t, stdout, "\r", output)
		}
	})

	t.Run("watch", func(t *testing.T) {
		var out bytes.Buffer
		w := &watcher{}
		w.report(&out, []podtable.Row{{Node: "n1", Pod: &evil}}, map[string]bool{"n1": true})
		assert.Contains(t, out.String(), `ADD    n1 default\r/web\x1b[2J\x1b]0;owned\a`)
		assert.NotContains(t, out.String(), "\x1b")
		assert.NotContains(t, out.String(), "\r")
	})

	t.Run("an endpoint's answer and an error body", func(t *testing.T) {
		status := http.StatusOK
		kubelet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte("ok\x1b[2K\rFAILED\x9b"))
		}))
		t.Cleanup(kubelet.Close)
		e := newEnv(t)
		stdout, stderr, err := e.run(t, "--kubelet-url", kubelet.URL, "--auth=none", "--endpoint", "healthz")
		require.NoError(t, err, stderr)
		assert.Equal(t, `ok\x1b[2K\rFAILED\x9b`+"\n", stdout)

		status = http.StatusForbidden
		_, _, err = e.run(t, "--kubelet-url", kubelet.URL, "--auth=none", "--endpoint", "healthz")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `403 Forbidden: ok\x1b[2K\rFAILED\x9b`)
		assert.NotContains(t, err.Error(), "\x1b")
	})

	t.Run("the apiserver's own error", func(t *testing.T) {
		apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fakecluster.WriteStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "boom\x1b[2K\rall is well")
		}))
		t.Cleanup(apiserver.Close)
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\n"+
			"clusters:\n- name: c\n  cluster:\n    server: "+apiserver.URL+"\n"+
			"contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"+
			"users:\n- name: u\n  user: {}\n"), 0o600))
		e := newEnv(t)
		_, _, err := e.run(t, "--kubeconfig", kubeconfig, "--node", "n1", "--via", "apiserver")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `boom\x1b[2K\rall is well`)
		assert.NotContains(t, err.Error(), "\x1b")
		assert.NotContains(t, err.Error(), "\r")
	})
}
