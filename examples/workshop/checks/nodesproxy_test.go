package checks

import (
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// Exercise 17: the identities as the exercise's file grants them, both tables in the target's
// log, and the two refusals word for word — and each missing piece said.
func TestNodesProxyExec(t *testing.T) {
	const (
		kubeletRefused   = "error: unable to upgrade streaming request: websocket: bad handshake (403 Forbidden): Forbidden (user=system:serviceaccount:exercise-17:pods-reader, verb=get, resource=nodes, subresource(s)=[proxy])"
		apiserverRefused = `error: unable to upgrade streaming request: nodes "minikube" is forbidden: User "system:serviceaccount:exercise-17:pods-reader" cannot get resource "nodes/proxy" in API group "" at the cluster scope`
		logPath          = "/api/v1/namespaces/exercise-17/pods/target/log"
		throughTheProxy  = "error: unable to upgrade streaming request: websocket: bad handshake (400 Bad Request): you must specify at least 1 of stdin, stdout, stderr"
		table            = "add table inet via-kubelet\r\n# new generation 2 by process 81 (nft)\r\n"
	)
	granted := map[string]bool{proxyGetter + " get nodes/proxy": true, podsReader + " get nodes/pods": true}
	newExercise := func(t *testing.T, grants map[string]bool) *cluster {
		c := newCluster(t)
		c.client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
			ra := sar.Spec.ResourceAttributes
			sar.Status.Allowed = grants[sar.Spec.User+" "+ra.Verb+" "+ra.Resource+"/"+ra.Subresource]
			return true, sar, nil
		})
		return c
	}
	answers := func(kubelet, apiserver, verb string) string {
		return "kubeletRefused: '" + kubelet + "'\napiserverRefused: '" + apiserver + "'\nverb: " + verb + "\nthroughTheProxy: '" + throughTheProxy + "'\n"
	}

	c := newExercise(t, map[string]bool{})
	fails(t, c.check(checkNodesProxyExec), "your answers in", "no answer file")
	c.answer("17-nodes-proxy-exec.yaml", "kubeletRefused: ''\napiserverRefused: ''\nverb: ''\nthroughTheProxy: ''\n")
	fails(t, c.check(checkNodesProxyExec), "still empty", "the template")

	tests := []struct {
		name    string
		grants  map[string]bool
		logs    string
		answers string
		want    string // missing; "" passes
	}{
		{"done", granted, table, answers(kubeletRefused, apiserverRefused, "get"), ""},
		{"the identities not made", map[string]bool{}, table, answers(kubeletRefused, apiserverRefused, "get"), "proxy-getter with get nodes/proxy"},
		{"proxy-getter may exec the usual way too", map[string]bool{proxyGetter + " get nodes/proxy": true, proxyGetter + " create pods/exec": true, podsReader + " get nodes/pods": true},
			table, answers(kubeletRefused, apiserverRefused, "get"), "proxy-getter without pods/exec"},
		{"pods-reader may get nodes/proxy", map[string]bool{proxyGetter + " get nodes/proxy": true, podsReader + " get nodes/pods": true, podsReader + " get nodes/proxy": true},
			table, answers(kubeletRefused, apiserverRefused, "get"), "pods-reader without nodes/proxy"},
		{"not straight to the kubelet", granted, "# nothing yet\r\n", answers(kubeletRefused, apiserverRefused, "get"), "nft add table inet via-kubelet"},
		{"a 403 through the proxy", granted, table, strings.Replace(answers(kubeletRefused, apiserverRefused, "get"), throughTheProxy, apiserverRefused, 1), "throughTheProxy"},
		{"no pod", granted, "", answers(kubeletRefused, apiserverRefused, "get"), "the pod exercise-17/target's log"},
		{"the kubelet's refusal of proxy-getter", granted, table, answers("Forbidden (user=system:serviceaccount:exercise-17:proxy-getter, verb=get, resource=nodes, subresource(s)=[proxy])", apiserverRefused, "get"), "kubeletRefused"},
		{"the apiserver's refusal, guessed", granted, table, answers(kubeletRefused, "forbidden", "get"), "apiserverRefused"},
		{"create, as for SPDY", granted, table, answers(kubeletRefused, apiserverRefused, "create"), "verb: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newExercise(t, tt.grants)
			if tt.logs != "" {
				c.raw[logPath] = tt.logs
			}
			c.answer("17-nodes-proxy-exec.yaml", tt.answers)
			expect(t, c.check(checkNodesProxyExec), tt.want, tt.name)
		})
	}
}
