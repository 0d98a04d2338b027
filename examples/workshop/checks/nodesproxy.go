package checks

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exercise 17's identities and pod (examples/workshop/17-nodes-proxy-exec/identities.yaml).
const (
	exerciseNamespace = "exercise-17"
	proxyGetter       = "system:serviceaccount:exercise-17:proxy-getter"
	podsReader        = "system:serviceaccount:exercise-17:pods-reader"
)

// 17. What get nodes/proxy grants: a command run in a pod by an identity that may only get
// nodes/proxy, straight on the kubelet's port — the table it added in the target's own network
// namespace, which the target's `nft monitor` logged — and, through the apiserver's node proxy,
// let through to the kubelet, which answers 400 (the upgrade lost its query); the refusals of one
// that may get nodes/pods, in the kubelet's words and the apiserver's.
func checkNodesProxyExec(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		KubeletRefused   string `json:"kubeletRefused"`
		APIServerRefused string `json:"apiserverRefused"`
		Verb             string `json:"verb"`
		ThroughTheProxy  string `json:"throughTheProxy"`
	}
	const file = "17-nodes-proxy-exec.yaml"
	if !answers(env, &r, file, &a) || unfilled(&r, env, file, map[string]bool{
		"kubeletRefused": a.KubeletRefused != "", "apiserverRefused": a.APIServerRefused != "", "verb": a.Verb != "",
		"throughTheProxy": a.ThroughTheProxy != ""}) {
		return r, nil
	}

	// The identities, as the exercise's file makes them: proxy-getter may get nodes/proxy and
	// may not exec the way kubectl does; pods-reader may get nodes/pods and not nodes/proxy.
	for _, q := range []struct {
		user, verb, resource, subresource, namespace string
		want                                         bool
		why                                          string
	}{
		{proxyGetter, "get", "nodes", "proxy", "", true, "proxy-getter with get nodes/proxy: kubectl apply -f examples/workshop/17-nodes-proxy-exec/identities.yaml"},
		{proxyGetter, "create", "pods", "exec", exerciseNamespace, false, "proxy-getter without pods/exec: nothing but the exercise's role bound to it"},
		{podsReader, "get", "nodes", "pods", "", true, "pods-reader with get nodes/pods: kubectl apply -f examples/workshop/17-nodes-proxy-exec/identities.yaml"},
		{podsReader, "get", "nodes", "proxy", "", false, "pods-reader without nodes/proxy: nothing but the exercise's role bound to it"},
	} {
		attrs := &authorizationv1.ResourceAttributes{Verb: q.verb, Resource: q.resource, Subresource: q.subresource, Namespace: q.namespace, Version: "v1"}
		if q.resource == "nodes" {
			attrs.Name = n.Name
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: q.user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + exerciseNamespace, "system:authenticated"}, ResourceAttributes: attrs}}
		out, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return r, fmt.Errorf("SubjectAccessReview: %w", err)
		}
		if out.Status.Allowed != q.want {
			r.missing("%s", q.why)
		}
	}

	// What running the command leaves: the table it added, in the target's log. A cluster admin's
	// kubectl exec could add the same table; nothing the kubelet or the apiserver keeps at their
	// default verbosity tells the two apart, so the line holds the attendee to the step, not
	// against a way around it.
	logs, err := env.raw(ctx, "/api/v1/namespaces/"+exerciseNamespace+"/pods/target/log")
	switch {
	case err != nil:
		r.missing("the pod exercise-17/target's log (kubectl -n exercise-17 logs target): %v", err)
	case !strings.Contains(string(logs), "add table inet via-kubelet"):
		r.missing("the command nft add table inet via-kubelet run in target straight on the kubelet's port, with proxy-getter's token (--via=kubelet): its log shows no such table")
	}
	if !strings.Contains(a.ThroughTheProxy, "400 Bad Request") || !strings.Contains(a.ThroughTheProxy, "you must specify at least 1 of stdin, stdout, stderr") {
		r.missing("throughTheProxy: what the kubelet answered proxy-getter's exec through the node proxy (--via=apiserver), word for word: not a 403")
	}

	if !strings.Contains(a.KubeletRefused, "Forbidden (user="+podsReader+", verb=get, resource=nodes, subresource(s)=[proxy])") {
		r.missing("kubeletRefused: the kubelet's refusal of pods-reader's exec, word for word (Forbidden (user=…))")
	}
	if !strings.Contains(a.APIServerRefused, `User "`+podsReader+`" cannot get resource "nodes/proxy"`) {
		r.missing("apiserverRefused: the apiserver's refusal of pods-reader's exec through the node proxy, word for word")
	}
	if normalize(a.Verb) != "get" {
		r.missing("verb: the verb the kubelet and the apiserver asked for (the refusals name it): a websocket's upgrade is an HTTP GET")
	}
	return r, nil
}
