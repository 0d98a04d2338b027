package client

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/pki"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// Doctor on real kubelets: every check passes for examples/rbac's ServiceAccount, and each
// broken step is the one that fails, with its fix.
func TestDoctor(t *testing.T) {
	c := miniCluster(t)
	ctx := context.Background()
	admin := adminConfig(t, c)
	applyRBAC(t, c)
	_, err := c.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "doctor-no-rbac"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Client.CoreV1().ServiceAccounts("default").Delete(ctx, "doctor-no-rbac", metav1.DeleteOptions{})
	})
	noRBAC := tokenFile(t, c, "default", "doctor-no-rbac")
	otherCA, err := pki.NewCA("not-the-cluster-ca")
	require.NoError(t, err)
	otherCAFile, err := otherCA.WriteCA(t.TempDir(), "other")
	require.NoError(t, err)

	ghost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "doctor-ghost"}}
	_, err = c.Client.CoreV1().Nodes().Create(ctx, ghost, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Client.CoreV1().Nodes().Delete(ctx, "doctor-ghost", metav1.DeleteOptions{}) })
	ghost.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: netns.PrivateNodeIP}}
	ghost.Status.DaemonEndpoints.KubeletEndpoint.Port = 1
	_, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, ghost, metav1.UpdateOptions{})
	require.NoError(t, err)

	type want struct {
		verdict agent.Verdict
		detail  string
		fix     string
	}
	tests := []struct {
		name string
		node string
		opts kubeletclient.Options
		want map[string]want // by check; checks not named must be ok
	}{
		{"examples/rbac's ServiceAccount, minted by auto: all ok", "node-a", kubeletclient.Options{}, map[string]want{
			agent.CheckTLS:         {agent.OK, "trusted for " + netns.PrivateNodeIP, ""},
			agent.CheckCredentials: {agent.OK, "the kubelet will see system:serviceaccount:kubelet-reader:kubelet-reader", ""},
			agent.CheckPermissions: {agent.OK, "get nodes/pods: yes; get nodes/proxy: no", ""},
			agent.CheckFetch:       {agent.OK, "5 pods from https://", ""},
		}},
		{"a ServiceAccount without RBAC", "node-a", kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: noRBAC}, map[string]want{
			// examples/rbac binds its role to kubelet-reader, not to this one: the fix says to bind it.
			agent.CheckPermissions: {agent.Fail, "get nodes/pods: no; get nodes/proxy: no", "kubectl apply -f examples/rbac/, then kubectl create clusterrolebinding kubelet-reader:default:doctor-no-rbac --clusterrole=kubelet-reader --serviceaccount=default:doctor-no-rbac"},
			agent.CheckFetch:       {agent.Fail, "forbidden", "may not get nodes/pods nor nodes/proxy"},
		}},
		{"the admin's own credentials: more than /pods needs", "node-b", kubeletclient.Options{Auth: kubeletclient.AuthKubeconfig}, map[string]want{
			agent.CheckPermissions: {agent.Warn, "get nodes/pods: yes; get nodes/proxy: yes", "opens exec on every node"},
		}},
		{"a CA that did not sign the kubelet", "node-a", kubeletclient.Options{KubeletCAFile: otherCAFile}, map[string]want{
			agent.CheckTLS:   {agent.Fail, "SANs [node-a " + netns.PrivateNodeIP + "]", "not signed by the CA the client trusts"},
			agent.CheckFetch: {agent.Fail, "certificate not trusted", ""},
		}},
		{"nothing listens", "doctor-ghost", kubeletclient.Options{Via: kubeletclient.ViaKubelet}, map[string]want{
			agent.CheckNetwork: {agent.Fail, "connection refused", "nothing listens there"},
			agent.CheckTLS:     {agent.Skipped, "no connection", ""},
			agent.CheckFetch:   {agent.Fail, "connection refused", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.ServiceAccountDir = t.TempDir()
			client, err := kubeletclient.New(admin, tt.opts)
			require.NoError(t, err)
			var checks []agent.Check
			require.EventuallyWithT(t, func(c *assert.CollectT) { // a fresh binding may take a moment to reach the authorizer
				checks = agent.Doctor(ctx, client, tt.node)
				require.Len(c, checks, 6, "%+v", checks)
				if tt.want[agent.CheckFetch].verdict == "" {
					assert.Equal(c, agent.OK, checks[5].Verdict, "%+v", checks[5])
				}
			}, 30*time.Second, 200*time.Millisecond)
			var names []string
			for _, ch := range checks {
				names = append(names, ch.Name)
				w, ok := tt.want[ch.Name]
				if !ok {
					w = want{verdict: agent.OK}
				}
				assert.Equal(t, w.verdict, ch.Verdict, "%s: %s (fix: %s)", ch.Name, ch.Detail, ch.Fix)
				assert.Contains(t, ch.Detail, w.detail, ch.Name)
				assert.Contains(t, ch.Fix, w.fix, ch.Name)
				if ch.Verdict == agent.Fail {
					assert.NotEmpty(t, ch.Fix, "%s fails without a fix", ch.Name)
				}
			}
			assert.Equal(t, []string{"discovery", "dns/tcp", "tls", "credentials", "permissions", "fetch"}, names)
		})
	}
}
