package checks

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

// Exercises 7–11: the kubelet's API from outside — where it is, whose certificate it shows,
// what a token may do, the apiserver's proxy, and an agent in the cluster.

// The ServiceAccount examples/rbac makes, as the kubelet sees it.
const (
	readerUser = "system:serviceaccount:kubelet-reader:kubelet-reader"
	// proxyBinding is examples/rbac/node-proxy's binding, and proxyLabel the label its objects carry.
	proxyBinding = "kubelet-reader-node-proxy"
	proxyLabel   = "kubelet-walkthrough/grants=exec-equivalent"
)

// 7. The kubelet's address and port as the client finds them, the certificate it shows (its
// issuer names the kubelet itself, with the second it made it), and a way past it.
func checkAddressAndPort(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Address string `json:"address"`
		Port    int    `json:"port"`
		Issuer  string `json:"issuer"`
		SANs    string `json:"sans"`
		Fix     string `json:"fix"`
	}
	if !answers(env, &r, "07-address-and-port.yaml", &a) || unfilled(&r, env, "07-address-and-port.yaml", map[string]bool{
		"address": a.Address != "", "port": a.Port != 0, "issuer": a.Issuer != "", "sans": a.SANs != "", "fix": a.Fix != ""}) {
		return r, nil
	}
	e, err := kubeletclient.EndpointFor(n, kubeletclient.DefaultAddressTypes, 0)
	if err != nil {
		return r, err
	}
	if normalize(a.Address) != e.Address.Address {
		r.missing("address: the node's %s, the first of the client's preferred address types it has (kubectl get node %s -o jsonpath='{.status.addresses}')", e.Address.Type, n.Name)
	}
	if a.Port != e.Port {
		r.missing("port: the one the kubelet reports in .status.daemonEndpoints.kubeletEndpoint.port")
	}
	hostname := addressOf(n, corev1.NodeHostName, n.Name)
	// openssl prints issuer=CN = minikube-ca@1764530000: the kubelet names its own CA after the
	// host and the second it made the certificate (client-go's cert.GenerateSelfSignedCertKey).
	issuer := regexp.MustCompile(`^(?:issuer\s*=\s*)?(?:CN\s*=\s*)?` + regexp.QuoteMeta(hostname) + `-ca@(\d+)$`).FindStringSubmatch(normalize(a.Issuer))
	if issuer == nil {
		r.missing("issuer: the certificate's issuer as openssl prints it in the node (sudo openssl x509 -in /var/lib/kubelet/pki/kubelet.crt -noout -issuer): the kubelet signed it itself, as %s-ca@<the second it made it>", hostname)
	} else if made, _ := strconv.ParseInt(issuer[1], 10, 64); time.Unix(made, 0).Before(n.CreationTimestamp.Add(-time.Hour)) || time.Unix(made, 0).After(env.now()) {
		r.missing("issuer: %s was not made by this node's kubelet (it names the second the certificate was made: this node is from %s)", a.Issuer, n.CreationTimestamp.Format(time.RFC3339))
	} else if cert, err := nodeCertificate(ctx, env, n, kubeletSelfSigned); err != nil {
		return r, err
	} else if cert == nil || cert.Issuer.CommonName != hostname+"-ca@"+issuer[1] {
		// The second is this node's: the certificate in the node names it.
		r.missing("issuer: the issuer of the certificate in the node, %s, as openssl prints it there (sudo openssl x509 -in %s -noout -issuer)", kubeletSelfSigned, kubeletSelfSigned)
	}
	if sans := sanList(a.SANs); !slices.Equal(sans, []string{hostname}) {
		r.missing("sans: the certificate's subject alternative names as openssl prints them (-ext subjectAltName): the host name only — which is why a client that dials %s cannot verify it", e.Address.Address)
	}
	if _, ok := fixes[normalizeFix(a.Fix)]; !ok {
		r.missing("fix: one way past the certificate — kubelet-ca-file with kubelet-tls-server-name=Hostname, rotate-server-certificates (a CSR the cluster CA signs), via-apiserver, or insecure-skip-tls-verify (with its warning)")
	}
	return r, nil
}

// kubeletSelfSigned is the serving certificate a kubelet makes itself, in minikube's node.
const kubeletSelfSigned = "/var/lib/kubelet/pki/kubelet.crt"

// nodeCertificate reads a certificate from the node (nil when there is none there).
func nodeCertificate(ctx context.Context, env Env, n *corev1.Node, path string) (*x509.Certificate, error) {
	out, err := nodeShell(ctx, env, n, "sudo cat "+path+" 2>/dev/null")
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode([]byte(out))
	if block == nil {
		return nil, nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s in the node: %w", path, err)
	}
	return cert, nil
}

// fixes are the ways past a kubelet's self-signed certificate, under each name an attendee may
// give them.
var fixes = map[string]string{
	"kubelet-ca-file": "ca", "kubelet-tls-server-name": "ca", "kubelet-ca-file+kubelet-tls-server-name": "ca", "kubelet-ca-file+kubelet-tls-server-name=hostname": "ca",
	"rotate-server-certificates": "csr", "server-tls-bootstrap": "csr", "servertlsbootstrap": "csr", "csr": "csr",
	"via-apiserver": "proxy", "via=apiserver": "proxy", "apiserver": "proxy", "node-proxy": "proxy",
	"insecure-skip-tls-verify": "insecure",
}

func normalizeFix(s string) string {
	s = strings.ToLower(normalize(s))
	s = strings.ReplaceAll(s, "--", "")
	s = strings.Join(strings.Fields(strings.NewReplacer(",", "+", " and ", "+", " + ", "+").Replace(s)), "")
	return strings.TrimPrefix(s, "kubelet.")
}

// sanList reads subject alternative names as openssl prints them ("DNS:minikube, IP
// Address:192.168.49.2") or as a plain list.
func sanList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(normalize(strings.Trim(s, "[]")), func(r rune) bool { return r == ',' || r == '\n' }) {
		f = strings.TrimSpace(f)
		for _, prefix := range []string{"DNS:", "IP Address:", "IP:"} {
			f = strings.TrimPrefix(f, prefix)
		}
		if f = strings.Trim(f, `"' `); f != "" {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// addressOf is the node's address of a type, or fallback.
func addressOf(n *corev1.Node, t corev1.NodeAddressType, fallback string) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return fallback
}

// 8. A ServiceAccount token at the kubelet: the kubelet's own refusal, then the narrowest grant.
func checkTokenAndRBAC(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		BeforeRBAC int    `json:"beforeRBAC"`
		AfterRBAC  int    `json:"afterRBAC"`
		Forbidden  string `json:"forbidden"`
		Narrowest  string `json:"narrowest"`
	}
	if answers(env, &r, "08-token-and-rbac.yaml", &a) && !unfilled(&r, env, "08-token-and-rbac.yaml", map[string]bool{
		"beforeRBAC": a.BeforeRBAC != 0, "afterRBAC": a.AfterRBAC != 0, "forbidden": a.Forbidden != "", "narrowest": a.Narrowest != ""}) {
		if a.BeforeRBAC != 403 || a.AfterRBAC != 200 {
			r.missing("the two status codes the kubelet answered, before and after the ClusterRole was bound (beforeRBAC, afterRBAC): 401 would mean it did not believe the token at all")
		}
		// The kubelet's words name who it saw and what it asked the apiserver about, in order:
		// nodes/pods first, then nodes/proxy
		// (pkg/kubelet/server/auth.go#L83-L157 (func (n nodeAuthorizerAttributesGetter) GetRequestAttributes)).
		if !strings.Contains(a.Forbidden, "user="+readerUser) || !strings.Contains(a.Forbidden, "subresource(s)=[pods proxy]") {
			r.missing("forbidden: the kubelet's answer to the token, word for word (Forbidden (user=…, verb=get, resource=nodes, subresource(s)=[…]))")
		}
		if n := strings.TrimPrefix(normalize(a.Narrowest), "nodes/"); n != "pods" {
			r.missing("narrowest: the subresource that allows /pods and nothing else the kubelet serves — the first the kubelet asked about")
		}
	}
	if _, err := env.Client.CoreV1().ServiceAccounts("kubelet-reader").Get(ctx, "kubelet-reader", metav1.GetOptions{}); err != nil {
		r.missing("the ServiceAccount kubelet-reader/kubelet-reader: kubectl apply -f examples/rbac/00-namespace.yaml -f examples/rbac/01-serviceaccount.yaml")
		return r, nil
	}
	if ok, err := readerMay(ctx, env, n.Name, "pods"); err != nil {
		return r, err
	} else if !ok {
		r.missing("RBAC for kubelet-reader: get on nodes/pods (kubectl apply -f examples/rbac/02-clusterrole.yaml -f examples/rbac/03-clusterrolebinding.yaml)")
	}
	if ok, err := readerMay(ctx, env, n.Name, "proxy"); err != nil {
		return r, err
	} else if ok {
		r.missing("no nodes/proxy for kubelet-reader: it opens exec on every node, and /pods does not need it")
	}
	// The kubelet keeps no trace of a request it answered (at its default verbosity), nor does the
	// apiserver of the reviews it made for it. What the calls leave is the token the README's curl
	// reads in the node: kubelet-reader's own, as the apiserver says (a TokenReview), and a
	// credential, so root's alone there — and the copy in the answers, this user's alone.
	if runtime.GOOS != "windows" { // Windows' file modes say nothing about who may read
		if st, err := os.Stat(filepath.Join(env.Answers, "token")); err == nil && st.Mode().Perm()&0o077 != 0 {
			r.missing("%s readable by others (%v): a token is a password — create it with umask 077, as the README does, or chmod 600 it", filepath.Join(env.Answers, "token"), st.Mode().Perm())
		}
	}
	out, err := nodeShell(ctx, env, n, "sudo stat -c %a "+nodeToken+" 2>/dev/null; echo '"+nodeMark+"'; sudo cat "+nodeToken+" 2>/dev/null")
	if err != nil {
		return r, err
	}
	mode, token, _ := strings.Cut(out, nodeMark+"\n")
	mode, token = strings.TrimSpace(mode), strings.TrimSpace(token)
	if token == "" {
		r.missing("the token you gave the kubelet, on the node at %s: kubectl -n kubelet-reader create token kubelet-reader into examples/workshop/answers/token, then minikube cp it there, as the README says", nodeToken)
		return r, nil
	}
	if mode != "600" {
		r.missing("the token on the node readable by root alone: minikube ssh -- sudo chmod 600 token (it is %s: minikube cp writes files readable by all)", mode)
	}
	review, err := env.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return r, fmt.Errorf("TokenReview of the token on the node: %w", err)
	}
	if !review.Status.Authenticated || review.Status.User.Username != readerUser {
		r.missing("the token on the node (%s) to be a valid token of kubelet-reader: the apiserver says it is not (%s) — create it again, as the README says", nodeToken, review.Status.Error)
	}
	return r, nil
}

// nodeToken is where exercise 8's README copies kubelet-reader's token in the node, for its curl.
const nodeToken = "/home/docker/token"

// readerMay asks the apiserver what the kubelet would ask it for kubelet-reader: may it get
// nodes/<subresource>?
func readerMay(ctx context.Context, env Env, nodeName, subresource string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   readerUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kubelet-reader", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "nodes", Subresource: subresource, Name: nodeName, Version: "v1"},
	}}
	out, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	return out.Status.Allowed, nil
}

// 9. The kubelet's serving certificate from a CSR the attendee approved: issued by the cluster
// CA, for the node's address as well as its name.
func checkServingCertificate(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		CSR    string `json:"csr"`
		Issuer string `json:"issuer"`
		SANs   string `json:"sans"`
	}
	if !answers(env, &r, "09-serving-certificate.yaml", &a) || unfilled(&r, env, "09-serving-certificate.yaml", map[string]bool{
		"csr": a.CSR != "", "issuer": a.Issuer != "", "sans": a.SANs != ""}) {
		return r, nil
	}
	name := normalize(a.CSR)
	name = name[strings.LastIndex(name, "/")+1:] // certificatesigningrequest.certificates.k8s.io/csr-x
	csr, err := env.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.missing("csr: %s is no CertificateSigningRequest of this cluster (kubectl get csr)", a.CSR)
		return r, nil
	}
	if err != nil {
		return r, err
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.Spec.Username != "system:node:"+n.Name {
		r.missing("csr: the kubelet's request for a serving certificate — signer %s, requested by system:node:%s; %s is a %s request by %s",
			certificatesv1.KubeletServingSignerName, n.Name, name, csr.Spec.SignerName, csr.Spec.Username)
		return r, nil
	}
	if !slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved
	}) {
		r.missing("%s approved: nothing in the cluster approves a kubelet's serving certificate for you (kubectl certificate approve)", name)
		return r, nil
	}
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil {
		r.missing("%s issued: approved, but the controller manager has not signed it yet", name)
		return r, nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return r, fmt.Errorf("%s's certificate: %w", name, err)
	}
	issuer := regexp.MustCompile(`^(?:issuer\s*=\s*)?(?:CN\s*=\s*)?`).ReplaceAllString(normalize(a.Issuer), "")
	if issuer != cert.Issuer.CommonName {
		r.missing("issuer: the issuer of the certificate the kubelet serves now, as openssl prints it in the node (the cluster CA's name)")
	}
	var want []string
	want = append(want, cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		want = append(want, ip.String())
	}
	slices.Sort(want)
	if !slices.Equal(sanList(a.SANs), want) {
		r.missing("sans: the subject alternative names of the certificate the kubelet serves now (-ext subjectAltName): an IP address among them this time")
	}
	return r, nil
}

// 10. /pods through the apiserver's node proxy, and the exec-equivalent role it needs removed
// again.
func checkNodeProxy(ctx context.Context, env Env) (Result, error) {
	var r Result
	n, err := node(ctx, env)
	if err != nil {
		return r, err
	}
	var a struct {
		Path       string `json:"path"`
		Pods       int    `json:"pods"`
		ProxyNeeds string `json:"proxyNeeds"`
	}
	if !answers(env, &r, "10-node-proxy.yaml", &a) || unfilled(&r, env, "10-node-proxy.yaml", map[string]bool{
		"path": a.Path != "", "pods": a.Pods != 0, "proxyNeeds": a.ProxyNeeds != ""}) {
		return r, nil
	}
	want := "/api/v1/nodes/" + n.Name + "/proxy/pods"
	path := normalize(a.Path)
	if u, err := url.Parse(path); err == nil && u.Scheme != "" {
		path = strings.TrimSuffix(u.Path, "/") // the full URL is as right as the path
	}
	if path != want {
		r.missing("path: the apiserver path that proxies to the kubelet's /pods (kubectl get --raw …)")
	}
	raw, err := env.raw(ctx, want)
	if err != nil {
		return r, fmt.Errorf("the kubelet's /pods through the node proxy: %w", err)
	}
	var pods corev1.PodList
	if err := json.Unmarshal(raw, &pods); err != nil {
		return r, fmt.Errorf("the kubelet's /pods: %w", err)
	}
	if a.Pods != len(pods.Items) {
		r.missing("pods: how many pods the kubelet lists (%d now) — jq '.items | length'", len(pods.Items))
	}
	if p := strings.TrimPrefix(normalize(a.ProxyNeeds), "nodes/"); p != "proxy" {
		r.missing("proxyNeeds: what the apiserver asked of kubelet-reader before it would proxy (its 403 names it)")
	}
	if ok, err := readerMay(ctx, env, n.Name, "pods"); err != nil {
		return r, err
	} else if !ok {
		r.missing("kubelet-reader with examples/rbac's role (nodes/pods): the README applies it first")
	}
	_, err = env.Client.RbacV1().ClusterRoleBindings().Get(ctx, proxyBinding, metav1.GetOptions{})
	switch {
	case err == nil:
		r.missing("the opt-in role removed again: kubectl delete -f examples/rbac/node-proxy/ — nodes/proxy also opens exec on every node")
	case !apierrors.IsNotFound(err):
		return r, err
	}
	if ok, err := readerMay(ctx, env, n.Name, "proxy"); err != nil {
		return r, err
	} else if ok {
		r.missing("no nodes/proxy left for kubelet-reader: something else still grants it (kubectl get clusterrolebindings -o wide | grep kubelet-reader)")
	}
	// Absent now is what a fresh cluster has too: applied, then removed, is in the apiserver's
	// memory of the bindings — its watch cache keeps their recent changes since it started, from
	// before the binding of kubelet-reader's own role, which the README applies first.
	reader, err := env.Client.RbacV1().ClusterRoleBindings().Get(ctx, readerBinding, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return r, nil // said above: kubelet-reader has no role
	}
	if err != nil {
		return r, err
	}
	made, deleted, err := madeAndDeleted(ctx, env, proxyBinding, reader.ResourceVersion)
	if err != nil {
		return r, err
	}
	if !made || !deleted {
		r.missing("the opt-in role applied, then removed: the apiserver saw no ClusterRoleBinding %s made and deleted since kubelet-reader's own binding was (kubectl apply -f examples/rbac/node-proxy/, then kubectl delete -f examples/rbac/node-proxy/)", proxyBinding)
	}
	return r, nil
}

// readerBinding is the ClusterRoleBinding of examples/rbac that gives kubelet-reader nodes/pods.
const readerBinding = "kubelet-reader"

// oldestRemembered reads the oldest resourceVersion a watch may start from, from the apiserver's
// answer to an older one ("too old resource version: 12 (345)").
var oldestRemembered = regexp.MustCompile(`too old resource version: \d+ \((\d+)\)`)

// madeAndDeleted watches the ClusterRoleBinding name from resourceVersion since (or, when the
// apiserver remembers less, from the oldest it does) and says whether it was made, and deleted
// after that. The apiserver sends what it remembers at once; the watch ends after two seconds.
func madeAndDeleted(ctx context.Context, env Env, name, since string) (made, deleted bool, err error) {
	for range 2 {
		timeout := int64(2)
		var w watch.Interface
		w, err = env.Client.RbacV1().ClusterRoleBindings().Watch(ctx, metav1.ListOptions{
			ResourceVersion: since, FieldSelector: "metadata.name=" + name, TimeoutSeconds: &timeout})
		if err == nil {
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Added:
					made = true
				case watch.Deleted:
					deleted = made
				case watch.Error:
					err = apierrors.FromObject(ev.Object)
				}
			}
			w.Stop()
		}
		if err == nil || !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			break
		}
		m := oldestRemembered.FindStringSubmatch(err.Error())
		if m == nil {
			break
		}
		since, made, deleted = m[1], false, false
	}
	if err != nil {
		return false, false, fmt.Errorf("the apiserver's memory of ClusterRoleBinding %s: %w", name, err)
	}
	return made, deleted, nil
}

// 11. examples/rbac/daemonset.yaml, as an agent is deployed: each pod reads its own node's
// kubelet, verified against the cluster CA, with nodes/pods only — the log shows the answer.
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
	if !slices.Contains(c.Args, "--via=kubelet") {
		r.missing("--via=kubelet in the container's args: each pod asks its own node's kubelet, which needs nodes/pods only")
	}
	fromDownwardAPI := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	})
	if !fromDownwardAPI {
		r.missing("NODE_NAME from the downward API (fieldRef spec.nodeName)")
	}
	if ok, err := readerMay(ctx, env, n.Name, "proxy"); err != nil {
		return r, err
	} else if ok {
		r.missing("no nodes/proxy for kubelet-reader: the agent reads its kubelet directly (kubectl delete -f examples/rbac/node-proxy/)")
	}
	pods, err := env.Client.CoreV1().Pods("kubelet-reader").List(ctx, metav1.ListOptions{LabelSelector: "app=kubelet-reader", FieldSelector: "spec.nodeName=" + n.Name})
	if err != nil {
		return r, err
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil && len(pods.Items[i].Status.ContainerStatuses) > 0 && pods.Items[i].Status.ContainerStatuses[0].Ready {
			pod = &pods.Items[i]
		}
	}
	if pod == nil {
		r.missing("the DaemonSet's pod on %s running: kubectl -n kubelet-reader describe pods (ErrImageNeverPull: build the image with minikube image build first)", n.Name)
		return r, nil
	}
	// The image built: the pod's process is the client compiled on this machine
	// (.bin/kubelet-client, the one file the image copies) — not some program printing its
	// table. Its executable, read in the node, has the file's SHA-256.
	client, err := os.ReadFile(filepath.Join(env.Root, ".bin", "kubelet-client"))
	if err != nil {
		r.missing("the client the image holds, compiled here: .bin/kubelet-client (CGO_ENABLED=0 GOOS=linux go build -o .bin/kubelet-client ./examples/kubelet-pods, then minikube image build as the README says): %v", err)
		return r, nil
	}
	_, id, _ := strings.Cut(pod.Status.ContainerStatuses[0].ContainerID, "://")
	if !regexp.MustCompile(`^[0-9a-f]{12,64}$`).MatchString(id) {
		return r, fmt.Errorf("the pod %s's container ID %q", pod.Name, pod.Status.ContainerStatuses[0].ContainerID)
	}
	out, err := nodeShell(ctx, env, n, "sudo sha256sum /proc/$(sudo crictl inspect --output go-template --template '{{.info.pid}}' "+id+" 2>/dev/null)/exe 2>/dev/null")
	if err != nil {
		return r, err
	}
	if running, built := strings.Fields(out+" "), fileSum256(client); len(running) == 0 || running[0] != built {
		r.missing("the DaemonSet's pod to run the client you built: the program in its container is not .bin/kubelet-client (its SHA-256 is %s) — the image is the README's (examples/rbac/Dockerfile, built with minikube image build from that file); after a new build, delete the pod and let the DaemonSet make it again", built)
		return r, nil
	}
	logs, err := env.Client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{TailLines: ptr.To(int64(40))}).Stream(ctx)
	if err != nil {
		return r, fmt.Errorf("the pod's log: %w", err)
	}
	defer logs.Close()
	data, err := readLog(logs)
	if err != nil {
		return r, err
	}
	// -o wide's VIA column says who answered: the kubelet itself.
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n.Name) + `\s+kube-system\s+kube-apiserver-` + regexp.QuoteMeta(n.Name) + `\s.*\skubelet\s`)
	if !row.Match(data) {
		last := strings.TrimSpace(string(data))
		if i := strings.LastIndex(last, "\nerror: "); i >= 0 {
			last = last[i+1:]
		}
		if len(last) > 300 {
			last = last[:300] + "…"
		}
		last = kubeletclient.Printable(last, true) // the pod's words: no control characters
		r.missing("the agent's log to show its node's pods, read from the kubelet (VIA kubelet): kubectl -n kubelet-reader logs ds/kubelet-reader. It says: %s\n      A certificate error? The kubelet's serving certificate must come from the cluster CA: exercise 9", last)
	}
	return r, nil
}

// fileSum256 is the SHA-256 of data, in hex, as sha256sum prints it.
func fileSum256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// maxLog bounds the agent's last forty log lines: its lines are a table's rows, short. A log
// longer than that is no agent's, and is not read to its end.
const maxLog = 1 << 20

func readLog(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxLog+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxLog {
		return nil, fmt.Errorf("the pod's last 40 log lines are longer than %d bytes: not read", maxLog)
	}
	return data, nil
}
