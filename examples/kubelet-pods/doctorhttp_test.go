package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// doctor asks the apiserver who the kubelet's credentials are (SelfSubjectReview), sending it
// those credentials. A token meant for kubelets does not go over plain HTTP there either, when
// the kubeconfig names an http:// server (kubectl proxy's, say): the check fails, saying why.
func TestDoctorSendsNoTokenOverPlainHTTP(t *testing.T) {
	e := newEnv(t)
	kubeconfig := func(user string) string {
		path := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\ncurrent-context: plain\n"+
			"clusters:\n- name: plain\n  cluster:\n    server: "+e.plain.URL+"\n"+
			"contexts:\n- name: plain\n  context:\n    cluster: plain\n    user: plain\n"+
			"users:\n- name: plain\n  user: "+user+"\n"), 0o600))
		return path
	}
	inPod := fakecluster.ServiceAccountDir(t, podToken, "")

	// In a pod with a kubeconfig of another server, the pod's token is not the credentials at all
	// (it belongs to the pod's own cluster): a token would be minted instead, which is refused
	// over http:// before doctor runs.
	tests := []struct {
		name       string
		saDir      string
		kubeconfig string
		args       []string
		secret     string
		wantErr    string // before doctor's checks; "" when doctor reports them
	}{
		{"--token-file", "", kubeconfig("{}"), []string{"--token-file", fakecluster.TokenFile(t, fileToken)}, fileToken, ""},
		{"in a pod, another server's kubeconfig: the pod's token", inPod, kubeconfig("{}"), nil, podToken, "refusing to send a TokenRequest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.plain.Reset()
			dir := e.serviceAccountDir
			if tt.saDir != "" {
				dir = tt.saDir
			}
			stdout, stderr, err := e.runIn(t, dir, append([]string{"doctor", "--kubeconfig", tt.kubeconfig, "--node", "n1", "-o", "json"}, tt.args...)...)
			require.Error(t, err)
			for _, req := range e.plain.Requests() {
				assert.NotContains(t, req.Authorization, tt.secret, "%s %s", req.Method, req.Path)
			}
			assert.NotContains(t, stdout+stderr+err.Error(), tt.secret)
			if tt.wantErr != "" {
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			var checks []agent.Check
			require.NoError(t, json.Unmarshal([]byte(stdout), &checks))
			require.Len(t, checks, 6)
			credentials := checks[3]
			assert.Equal(t, agent.CheckCredentials, credentials.Name)
			assert.Equal(t, agent.Fail, credentials.Verdict)
			assert.Contains(t, credentials.Detail, "refusing to send them to the apiserver over plain http://127.0.0.1:")
			assert.Equal(t, "nothing was sent: the kubeconfig's server is not https://. Point it at the apiserver's https:// address, not at kubectl proxy's", credentials.Fix)
			assert.NotContains(t, stdout+stderr+err.Error(), tt.secret)
		})
	}
}
