package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-client/kubeletclient"
)

// 1. staticPodPath from the kubelet's /configz, and the mirror pods of the control plane.
func checkFindStaticPods(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		StaticPodPath string   `json:"staticPodPath"`
		MirrorPods    []string `json:"mirrorPods"`
	}
	if !answers(env, &r, "01-static-pods.yaml", &a) {
		return r, nil
	}
	raw, err := env.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "configz").DoRaw(ctx)
	if err != nil {
		return r, fmt.Errorf("the kubelet's /configz through the node proxy: %w", err)
	}
	var configz struct {
		KubeletConfig struct {
			StaticPodPath string `json:"staticPodPath"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &configz); err != nil {
		return r, fmt.Errorf("decode /configz: %w", err)
	}
	if a.StaticPodPath != configz.KubeletConfig.StaticPodPath {
		r.missing("staticPodPath: you wrote %q; the kubelet's /configz says otherwise (kubectl get --raw /api/v1/nodes/%s/proxy/configz)", a.StaticPodPath, n.Name)
	}
	mirrors, err := mirrorPods(ctx, env, n.Name)
	if err != nil {
		return r, err
	}
	want := sortedKeys(mirrors)
	got := slices.Sorted(slices.Values(a.MirrorPods))
	for _, m := range want {
		if !slices.Contains(got, m) {
			r.missing("mirror pod %s in mirrorPods (as namespace/name): it has the kubernetes.io/config.mirror annotation", m)
		}
	}
	for _, m := range got {
		if _, ok := mirrors[m]; !ok {
			r.missing("%s out of mirrorPods: it is not a mirror pod on %s", m, n.Name)
		}
	}
	return r, nil
}

// 2. A static pod of one's own, edited: its mirror pod carries the edit.
func checkAddStaticPod(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	mirrors, err := mirrorPods(ctx, env, n.Name)
	if err != nil {
		return r, err
	}
	name := "default/workshop-web-" + n.Name
	p, ok := mirrors[name]
	switch {
	case !ok:
		r.missing("the mirror pod %s: copy workshop-web.yaml into the kubelet's static pod directory", name)
	case p.Labels["edited"] != "true":
		r.missing("the edit: add the label edited: \"true\" to the manifest on the node, and see the mirror pod change (a new UID: an edit is a REMOVE and an ADD)")
	}
	return r, nil
}

// 3. A broken manifest is skipped, and the attendee found the kubelet's reason.
func checkBrokenManifest(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	manifest := filepath.Join(env.Root, "examples/workshop/03-broken-manifest/workshop-broken.yaml")
	_, reason := staticpods.ReadManifest(manifest, types.NodeName(n.Name))
	if reason == nil {
		return r, fmt.Errorf("%s is not broken", manifest)
	}
	mirrors, err := mirrorPods(ctx, env, n.Name)
	if err != nil {
		return r, err
	}
	if _, ok := mirrors["default/workshop-broken-"+n.Name]; ok {
		r.missing("workshop-broken to be refused — it has a mirror pod, so the manifest on the node is not the broken one")
	}
	answer, err := os.ReadFile(filepath.Join(env.Answers, "03-reason.txt"))
	switch {
	case err != nil:
		r.missing("the kubelet's reason in %s: find it in the kubelet's log (minikube ssh -- sudo journalctl -u kubelet | grep workshop-broken)", filepath.Join(env.Answers, "03-reason.txt"))
	case !strings.Contains(string(answer), reason.Error()):
		r.missing("the kubelet's own words in 03-reason.txt; compare with the toy's: go run ./chapters/06-static-pods load --manifests examples/workshop/03-broken-manifest")
	}
	return r, nil
}

// 4. examples/rbac lets its ServiceAccount read the kubelet's /pods.
func checkTokenAndRBAC(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		BeforeRBAC int    `json:"beforeRBAC"`
		AfterRBAC  int    `json:"afterRBAC"`
		Narrowest  string `json:"narrowest"`
	}
	if answers(env, &r, "04-token-and-rbac.yaml", &a) {
		if a.BeforeRBAC != 403 || a.AfterRBAC != 200 {
			r.missing("the two status codes you saw, before and after applying the RBAC (beforeRBAC, afterRBAC)")
		}
		if a.Narrowest != "nodes/pods" {
			r.missing("narrowest: the subresource that allows /pods and nothing else the kubelet serves")
		}
	}
	if _, err := env.Client.CoreV1().ServiceAccounts("kubelet-reader").Get(ctx, "kubelet-reader", metav1.GetOptions{}); err != nil {
		r.missing("the ServiceAccount kubelet-reader/kubelet-reader: kubectl apply -f examples/rbac/")
		return r, nil
	}
	allowed, err := canGetNodesPods(ctx, env, n.Name)
	if err != nil {
		return r, err
	}
	if !allowed {
		r.missing("RBAC for kubelet-reader: get on nodes/pods (kubectl apply -f examples/rbac/)")
	}
	return r, nil
}

// canGetNodesPods asks the apiserver what the kubelet would ask it for kubelet-reader.
func canGetNodesPods(ctx context.Context, env Env, nodeName string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:kubelet-reader:kubelet-reader",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kubelet-reader", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "nodes", Subresource: "pods", Name: nodeName, Version: "v1"},
	}}
	out, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	return out.Status.Allowed, nil
}

// 5. The kubelet's address and port as the client finds them, and a fix for its certificate.
func checkAddressAndPort(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Address string `json:"address"`
		Port    int    `json:"port"`
		Fix     string `json:"fix"`
	}
	if !answers(env, &r, "05-address-and-port.yaml", &a) {
		return r, nil
	}
	e, err := kubeletclient.EndpointFor(n, kubeletclient.DefaultAddressTypes, 0)
	if err != nil {
		return r, err
	}
	if a.Address != e.Address.Address {
		r.missing("address: the node's %s (kubectl get node %s -o jsonpath='{.status.addresses}')", e.Address.Type, n.Name)
	}
	if a.Port != e.Port {
		r.missing("port: the one the kubelet reports in .status.daemonEndpoints.kubeletEndpoint.port")
	}
	fixes := []string{"kubelet-ca-file", "server-tls-bootstrap", "insecure-skip-tls-verify", "via-apiserver"}
	if !slices.Contains(fixes, a.Fix) {
		r.missing("fix: one of %s", strings.Join(fixes, ", "))
	}
	return r, nil
}

// 6. /pods through the apiserver's node proxy, compared with the kubelet's own answer.
func checkNodeProxy(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Path string `json:"path"`
		Pods int    `json:"pods"`
		Same bool   `json:"same"`
	}
	if !answers(env, &r, "06-node-proxy.yaml", &a) {
		return r, nil
	}
	c, err := kubeletclient.New(env.Config, kubeletclient.Options{Via: kubeletclient.ViaAPIServer})
	if err != nil {
		return r, err
	}
	res := c.Pods(ctx, n.Name)
	if res.Err != nil {
		return r, res.Err
	}
	if a.Path != res.URL {
		r.missing("path: the apiserver path that proxies to the kubelet's /pods")
	}
	if a.Pods != len(res.Pods) {
		r.missing("pods: how many pods the kubelet lists (through the proxy, as directly)")
	}
	if !a.Same {
		r.missing("same: whether the two answers list the same pods")
	}
	return r, nil
}

// 7. examples/rbac/daemonset.yaml, as an agent is deployed.
func checkDaemonSet(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	ds, err := env.Client.AppsV1().DaemonSets("kubelet-reader").Get(ctx, "kubelet-reader", metav1.GetOptions{})
	if err != nil {
		r.missing("the DaemonSet kubelet-reader/kubelet-reader: kubectl apply -f examples/rbac/ (with daemonset.yaml)")
		return r, nil
	}
	spec := ds.Spec.Template.Spec
	if spec.ServiceAccountName != "kubelet-reader" {
		r.missing("serviceAccountName: kubelet-reader, so that the pod gets that ServiceAccount's projected token")
	}
	if len(spec.Containers) == 0 {
		r.missing("a container")
		return r, nil
	}
	c := spec.Containers[0]
	if !slices.Contains(c.Args, "--auth=token") {
		r.missing("--auth=token in the container's args")
	}
	fromDownwardAPI := false
	for _, e := range c.Env {
		fromDownwardAPI = fromDownwardAPI || (e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName")
	}
	if !fromDownwardAPI {
		r.missing("NODE_NAME from the downward API (fieldRef spec.nodeName)")
	}
	if allowed, err := canGetNodesPods(ctx, env, n.Name); err != nil {
		return r, err
	} else if !allowed {
		r.missing("RBAC for kubelet-reader on nodes/pods")
	}
	switch {
	case ds.Status.DesiredNumberScheduled == 0:
		r.Notes = append(r.Notes, "no DaemonSet pods are scheduled: this cluster runs no controller manager (the embedded one); on minikube they run")
	case ds.Status.NumberReady < ds.Status.DesiredNumberScheduled:
		r.missing("%d of %d pods ready: kubectl -n kubelet-reader describe pods (was the image built with minikube image build?)", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}
	return r, nil
}

// checkCoding runs a coding exercise's test against the attendee's code.
func checkCoding(dir string) func(context.Context, Env) (Result, error) {
	return func(ctx context.Context, env Env) (Result, error) {
		var r Result
		cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "./examples/workshop/"+dir+"/")
		cmd.Dir = env.Root
		cmd.Env = append(os.Environ(), "WORKSHOP_EXERCISE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			// The assertions' own messages say what is wrong; testify prints them as "Messages:".
			var said []string
			for _, line := range strings.Split(string(out), "\n") {
				if _, msg, ok := strings.Cut(line, "Messages:"); ok {
					said = append(said, strings.TrimSpace(msg))
				}
			}
			if len(said) == 0 {
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				said = lines[max(0, len(lines)-8):]
			}
			r.missing("the exercise's test to pass; it says:\n      %s\n    (the whole output: go test ./examples/workshop/%s/ with WORKSHOP_EXERCISE=1)", strings.Join(said, "\n      "), dir)
		}
		return r, nil
	}
}
