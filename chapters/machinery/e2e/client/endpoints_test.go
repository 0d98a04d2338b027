package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// The kubelet's other read endpoints, on a real kubelet: each answers with its narrow
// permission, and refuses a reader that has only nodes/pods, naming the permission it needs.
func TestReadEndpoints(t *testing.T) {
	s := startStandalone(t)
	client := func(user string) *kubeletclient.Client {
		c, err := kubeletclient.New(nil, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens[user], KubeletCAFile: s.caFile, ServiceAccountDir: t.TempDir()})
		require.NoError(t, err)
		return c
	}
	all, reader := client("all-reads"), client("reader")
	require.Eventually(t, func() bool { // the kubelet may still be reading its manifests, and starting their containers
		r := all.FetchURL(context.Background(), s.kubelet.SecureURL)
		// /runningpods is the runtime's view: it lags /pods (the pod manager's) under load.
		running := all.GetURL(context.Background(), s.kubelet.SecureURL, kubeletclient.ReadEndpoints["runningpods"])
		return r.Err == nil && len(r.Pods) == 5 && running.Err == nil && len(running.Pods) > 0
	}, 30*time.Second, 50*time.Millisecond)

	tests := []struct {
		endpoint   string
		wantBody   string // in the answer
		narrowPerm string // what the reader with nodes/pods only is told to grant; empty: allowed
		// wantErr: the hollow kubelet's fake cAdvisor has no root cgroup, so /stats/summary is a
		// 500 here (on a real node, the summary) — and its own words must reach the reader.
		wantErr string
	}{
		{"pods", `"kind":"PodList"`, "", ""},
		{"runningpods", `"kind":"PodList"`, "", ""},
		{"healthz", "ok", "get nodes/healthz", ""},
		{"configz", `"kubeletconfig"`, "get nodes/configz", ""},
		{"metrics/resource", "# HELP", "get nodes/metrics", ""},
		{"stats/summary", "", "get nodes/stats", "500 Internal Server Error: Internal Error: failed to get root cgroup stats"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			ep := kubeletclient.ReadEndpoints[tt.endpoint]
			r := all.GetURL(context.Background(), s.kubelet.SecureURL, ep)
			if tt.wantErr != "" {
				var e *agent.Error
				require.True(t, errors.As(agent.Explain(context.Background(), all, r.Err), &e), "%v", r.Err)
				assert.Equal(t, agent.Status, e.Kind)
				assert.Contains(t, e.Error(), tt.wantErr)
			} else {
				require.NoError(t, r.Err)
				assert.Contains(t, string(r.Body), tt.wantBody)
			}
			if ep.Pods {
				assert.NotEmpty(t, r.Pods)
			}

			r = reader.GetURL(context.Background(), s.kubelet.SecureURL, ep)
			if tt.narrowPerm == "" {
				require.NoError(t, r.Err)
				return
			}
			var e *agent.Error
			require.True(t, errors.As(agent.Explain(context.Background(), reader, r.Err), &e), "%v", r.Err)
			assert.Equal(t, agent.Forbidden, e.Kind)
			// The real kubelet names what it asked for: stats and metrics have no nodes/proxy fallback.
			assert.Contains(t, e.Hint, "Grant "+tt.narrowPerm)
			// examples/rbac grants none of these: the hint gives the rule instead of pointing there.
			assert.NotContains(t, e.Hint, "kubectl apply -f examples/rbac")
			assert.Contains(t, e.Hint, "kubectl create clusterrole get-"+strings.ReplaceAll(strings.TrimPrefix(tt.narrowPerm, "get "), "/", "-"))
			assert.Equal(t, tt.narrowPerm, ep.Permission)
		})
	}
}
