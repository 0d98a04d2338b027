package checks

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// The checkers against a fake cluster: what each accepts (every correct form of an answer) and
// what it refuses (a state that doing nothing leaves, a wrong or guessed answer), and that a FAIL
// says where to look.

// root is the repository's root.
var root = repo.Root()

var now = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

// cluster is a fake apiserver holding one node, "minikube", as minikube's, and what a test adds.
type cluster struct {
	t       *testing.T
	client  *fake.Clientset
	answers string
	raw     map[string]string // the node proxy's answers, by path
	// allowed says which nodes/<subresource> the ServiceAccount kubelet-reader may get.
	allowed map[string]bool
}

func newCluster(t *testing.T, objects ...runtime.Object) *cluster {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "minikube", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status: corev1.NodeStatus{
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.49.2"}, {Type: corev1.NodeHostName, Address: "minikube"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		},
	}
	c := &cluster{t: t, answers: t.TempDir(), raw: map[string]string{}, allowed: map[string]bool{}}
	c.client = fake.NewClientset(append([]runtime.Object{n}, objects...)...)
	c.client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = sar.Spec.User == readerUser && c.allowed[sar.Spec.ResourceAttributes.Subresource]
		return true, sar, nil
	})
	return c
}

func (c *cluster) env() Env {
	root, err := filepath.Abs(root)
	require.NoError(c.t, err)
	return Env{Client: c.client, Answers: c.answers, Root: root, Now: func() time.Time { return now },
		Raw: func(_ context.Context, path string) ([]byte, error) {
			if body, ok := c.raw[path]; ok {
				return []byte(body), nil
			}
			return nil, fmt.Errorf("the fake proxy has no %s", path)
		}}
}

func (c *cluster) answer(file, content string) {
	require.NoError(c.t, os.WriteFile(filepath.Join(c.answers, file), []byte(content), 0o644))
}

func (c *cluster) check(f func(context.Context, Env) (Result, error)) Result {
	r, err := f(context.Background(), c.env())
	require.NoError(c.t, err)
	return r
}

// passes and fails say what a result must be; fails also names a piece of what is missing.
func passes(t *testing.T, r Result, msg string) {
	t.Helper()
	assert.True(t, r.Passed(), "%s: still misses %v", msg, r.Missing)
}

func fails(t *testing.T, r Result, want, msg string) {
	t.Helper()
	if assert.False(t, r.Passed(), msg) {
		assert.Contains(t, strings.Join(r.Missing, "\n"), want, msg)
	}
}

func mirror(namespace, name, hash string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name),
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: hash, "kubernetes.io/config.hash": hash}},
		Spec: corev1.PodSpec{NodeName: "minikube"}}
}

func TestFindStaticPods(t *testing.T) {
	c := newCluster(t, mirror("kube-system", "etcd-minikube", "h1"), mirror("kube-system", "kube-apiserver-minikube", "h2"),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-1"}, Spec: corev1.PodSpec{NodeName: "minikube"}})
	c.raw["/api/v1/nodes/minikube/proxy/configz"] = `{"kubeletconfig":{"staticPodPath":"/etc/kubernetes/manifests"}}`

	fails(t, c.check(checkFindStaticPods), "your answers in", "no answer file")
	c.answer("01-static-pods.yaml", "staticPodPath: \"\"\nmirrorPods: []\n")
	fails(t, c.check(checkFindStaticPods), "mirrorPods, staticPodPath still empty", "the template, untouched")
	c.answer("01-static-pods.yaml", "staticPodPath: /etc/kubernetes/manifests/\nmirrorPods: [kube-system/etcd-minikube, kube-apiserver-minikube]\n")
	passes(t, c.check(checkFindStaticPods), "a trailing slash, a bare name")
	c.answer("01-static-pods.yaml", "staticPodPath: /etc/kubernetes/manifests\nmirrorPods: [kube-system/etcd-minikube, kube-system/kube-apiserver-minikube, kube-system/coredns-1]\n")
	fails(t, c.check(checkFindStaticPods), "kube-system/coredns-1 out of mirrorPods", "a pod the apiserver made")
	c.answer("01-static-pods.yaml", "staticPodPath: /etc/kubernetes/manifests\nmirrorPods: [kube-system/etcd-minikube]\n")
	fails(t, c.check(checkFindStaticPods), "mirror pod kube-system/kube-apiserver-minikube in mirrorPods", "one missing")
	c.answer("01-static-pods.yaml", "staticPodPath: /etc/kubelet.d\nmirrorPods: [kube-system/etcd-minikube, kube-system/kube-apiserver-minikube]\n")
	fails(t, c.check(checkFindStaticPods), "the kubelet's /configz says otherwise", "another path")
	c.answer("01-static-pods.yaml", "staticPodPat: /etc/kubernetes/manifests\n")
	fails(t, c.check(checkFindStaticPods), "valid YAML with the template's keys", "a typo in a key")
}

func TestAddStaticPod(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, workshopManifest))
	require.NoError(t, err)
	original, err := staticpods.Decode(data, workshopManifestNode, "minikube")
	require.NoError(t, err)
	edited := mirror("default", "workshop-pod-minikube", "edited-hash")
	edited.Labels = map[string]string{"app": "workshop-pod", "version": "v2"}
	edited.UID = "mirror-after"

	c := newCluster(t)
	fails(t, c.check(checkAddStaticPod), "the mirror pod default/workshop-pod-minikube", "nothing copied")

	c = newCluster(t, edited)
	good := fmt.Sprintf("hashBefore: %s\nhashAfter: edited-hash\nmirrorUIDBefore: mirror-before\nmirrorUIDAfter: mirror-after\n", original.UID)
	c.answer("02-static-pod.yaml", good)
	passes(t, c.check(checkAddStaticPod), "the hash of the unedited manifest, the current mirror's")
	c.answer("02-static-pod.yaml", strings.Replace(good, string(original.UID), "0123456789abcdef0123456789abcdef", 1))
	fails(t, c.check(checkAddStaticPod), "hashes to "+string(original.UID), "a made-up hash before the edit")
	c.answer("02-static-pod.yaml", strings.Replace(good, "mirror-before", "mirror-after", 1))
	fails(t, c.check(checkAddStaticPod), "mirrorUIDBefore", "the mirror never deleted")

	unedited := mirror("default", "workshop-pod-minikube", string(original.UID))
	unedited.Labels = map[string]string{"app": "workshop-pod"}
	c = newCluster(t, unedited)
	c.answer("02-static-pod.yaml", good)
	fails(t, c.check(checkAddStaticPod), "the label version: v2", "no edit")
}

func TestBrokenManifest(t *testing.T) {
	c := newCluster(t)
	c.answer("03-reason.txt", "Replace this line with the kubelet's reason\n")
	fails(t, c.check(checkBrokenManifest), "the kubelet's own words", "the template")
	c.answer("03-reason.txt", `static pods may not reference secrets`)
	passes(t, c.check(checkBrokenManifest), "the reason")
	c.answer("03-reason.txt", `E1130 kubelet "Could not process manifest file" err="static pods may not reference secrets" path="/etc/kubernetes/manifests/workshop-broken.yaml"`)
	passes(t, c.check(checkBrokenManifest), "the whole journal line")
	c = newCluster(t, mirror("default", "workshop-broken-minikube", "h"))
	c.answer("03-reason.txt", `static pods may not reference secrets`)
	fails(t, c.check(checkBrokenManifest), "it has a mirror pod", "a manifest that is not the broken one")
}

func TestKubeletWillNotStart(t *testing.T) {
	frozen := now.Add(-3 * time.Minute)
	node := func(readySince time.Time) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "minikube"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}}}
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "minikube"},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: now.Add(-5 * time.Second)}}}
	notReady := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "minikube.1"}, Reason: "NodeNotReady",
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "minikube"}, LastTimestamp: metav1.NewTime(frozen.Add(55 * time.Second))}
	answers := fmt.Sprintf("error: 'failed to load kubelet config file, path: /var/lib/kubelet/config.yaml, error: yaml: line 19: could not find expected '':'''\nleaseRenewTime: %q\n", frozen.Format(time.RFC3339Nano))

	c := newCluster(t)
	require.NoError(t, c.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), node(frozen.Add(80*time.Second)), ""))
	require.NoError(t, c.client.Tracker().Add(lease))
	c.answer("04-kubelet-will-not-start.yaml", answers)
	fails(t, c.check(checkKubeletWillNotStart), "NodeNotReady event", "no NotReady seen")
	require.NoError(t, c.client.Tracker().Add(notReady))
	passes(t, c.check(checkKubeletWillNotStart), "down, NotReady, back")

	c.answer("04-kubelet-will-not-start.yaml", strings.Replace(answers, "could not find expected", "something else", 1))
	fails(t, c.check(checkKubeletWillNotStart), "error: the kubelet's own words", "not the kubelet's words")
	c.answer("04-kubelet-will-not-start.yaml", answers)
	require.NoError(t, c.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), node(frozen.Add(-time.Hour)), ""))
	fails(t, c.check(checkKubeletWillNotStart), "to have gone NotReady", "Ready since before the Lease froze")
	c.answer("04-kubelet-will-not-start.yaml", "error: \"yaml: line 19: could not find expected ':'\"\nleaseRenewTime: yesterday\n")
	fails(t, c.check(checkKubeletWillNotStart), "leaseRenewTime: the Lease's spec.renewTime", "not a time")
}

func TestKubeletSetting(t *testing.T) {
	line := `Nov 30 20:01:02 minikube kubelet[512]: I1130 20:01:02.123456     512 kubelet.go:2062] "SyncPod enter" pod="kube-system/etcd-minikube" podUID="abc"`
	c := newCluster(t)
	c.raw["/api/v1/nodes/minikube/proxy/configz"] = `{"kubeletconfig":{"logging":{"verbosity":0}}}`
	c.answer("05-kubelet-setting.yaml", fmt.Sprintf("verbosity: 4\nlogLine: '%s'\n", line))
	fails(t, c.check(checkKubeletSetting), "reads its configuration file only when it starts", "the file edited, the kubelet not restarted")
	c.raw["/api/v1/nodes/minikube/proxy/configz"] = `{"kubeletconfig":{"logging":{"verbosity":4}}}`
	passes(t, c.check(checkKubeletSetting), "restarted")
	c.answer("05-kubelet-setting.yaml", "verbosity: 4\nlogLine: 'I1130 20:01:02.123456     512 kubelet.go:100] \"Starting kubelet\"'\n")
	fails(t, c.check(checkKubeletSetting), "logLine", "a line verbosity 0 prints too")
}

func TestCrictlAndAPIServer(t *testing.T) {
	running := func(name, id string, uid types.UID, started time.Time) *corev1.Pod {
		p := mirror("kube-system", name+"-minikube", "h-"+name)
		p.UID = uid
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: name, Ready: true, ContainerID: "containerd://" + id,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
		return p
	}
	// The kubelet's /pods, through the node proxy: its own, fresh statuses.
	kubeletPods := func(pods ...*corev1.Pod) string {
		list := corev1.PodList{}
		for _, p := range pods {
			list.Items = append(list.Items, *p)
		}
		data, err := json.Marshal(list)
		require.NoError(t, err)
		return string(data)
	}
	const (
		exited   = "e702b6b6f99d9a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3"
		current  = "a1b2c3d4e5f6a7b8"
		logsPath = "/api/v1/nodes/minikube/proxy/logs/containers/"
		logFile  = "kube-apiserver-minikube_kube-system_kube-apiserver-" + exited + ".log"
	)
	listing := func(files ...string) string {
		var b strings.Builder
		b.WriteString("<pre>\n")
		for _, f := range files {
			fmt.Fprintf(&b, "<a href=%q>%s</a>\n", f, f)
		}
		return b.String() + "</pre>\n"
	}
	backOff := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver-minikube.1", Namespace: "kube-system"}, Reason: "BackOff",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "kube-system", Name: "kube-apiserver-minikube", UID: "broken-uid"},
		Message:        "Back-off restarting failed container kube-apiserver in pod kube-apiserver-minikube_kube-system(broken-uid)"}
	answers := "error: 'Error: unknown flag: --authorisation-mode'\nexitedContainer: e702b6b6f99d9\n"
	setup := func(objects ...runtime.Object) *cluster {
		c := newCluster(t, objects...)
		c.raw["/api/v1/nodes/minikube/proxy/pods"] = kubeletPods(running("etcd", "e1", "etcd-uid", now.Add(-time.Hour)), running("kube-apiserver", current, "repaired-uid", now.Add(-time.Minute)))
		c.answer("06-crictl-and-apiserver.yaml", answers)
		return c
	}

	c := setup()
	c.raw[logsPath] = listing(logFile, "kube-apiserver-minikube_kube-system_kube-apiserver-"+current+".log")
	c.raw[logsPath+logFile] = "2026-12-01T12:58:01.1Z stderr F Error: unknown flag: --authorisation-mode\n"
	passes(t, c.check(checkCrictlAndAPIServer), "the exited container's log says the error")
	c.raw[logsPath+logFile] = "2026-12-01T12:58:01.1Z stderr F I1201 serving on 8443\n"
	fails(t, c.check(checkCrictlAndAPIServer), "does not say", "a container whose log is another's")

	c = setup(backOff)
	c.raw[logsPath] = listing("kube-apiserver-minikube_kube-system_kube-apiserver-" + current + ".log")
	passes(t, c.check(checkCrictlAndAPIServer), "its log collected, the kubelet's BackOff event for the broken pod")

	repairedBackOff := backOff.DeepCopy()
	repairedBackOff.InvolvedObject.UID = "repaired-uid"
	c = setup(repairedBackOff)
	c.raw[logsPath] = listing()
	fails(t, c.check(checkCrictlAndAPIServer), "to have been broken and repaired", "a BackOff of the running pod is no evidence of the break")
	c = setup()
	c.raw[logsPath] = listing()
	fails(t, c.check(checkCrictlAndAPIServer), "to have been broken and repaired", "no log, no event")

	c = setup()
	c.raw[logsPath] = listing(logFile)
	c.raw[logsPath+logFile] = "2026-12-01T12:58:01.1Z stderr F Error: unknown flag: --authorisation-mode\n"
	c.answer("06-crictl-and-apiserver.yaml", "error: 'Error: unknown flag: --authorisation-mode'\nexitedContainer: "+current[:12]+"\n")
	fails(t, c.check(checkCrictlAndAPIServer), "the kube-apiserver that runs now", "the running container's ID")
	c.answer("06-crictl-and-apiserver.yaml", "error: 'Error: unknown flag: --authorization-mode'\nexitedContainer: e702b6b6f99d9\n")
	fails(t, c.check(checkCrictlAndAPIServer), "error: what the exited kube-apiserver container printed", "the README's fix, not the error")
}

// selfSigned makes a certificate as the kubelet makes its own: issuer <host>-ca@<unix time>.
func selfSigned(t *testing.T, made time.Time) string {
	return fmt.Sprintf("minikube-ca@%d", made.Unix())
}

func TestAddressAndPort(t *testing.T) {
	made := now.Add(-30 * time.Minute)
	c := newCluster(t)
	for _, tt := range []struct {
		issuer, sans, fix string
	}{
		{"issuer=CN = " + selfSigned(t, made), "DNS:minikube", "kubelet-ca-file + kubelet-tls-server-name=Hostname"},
		{"CN=" + selfSigned(t, made), "minikube", "--kubelet-ca-file"},
		{selfSigned(t, made), "[DNS:minikube]", "rotate-server-certificates"},
		{selfSigned(t, made), "DNS:minikube", "--via=apiserver"},
		{selfSigned(t, made), "DNS:minikube", "kubelet.serverTLSBootstrap"},
	} {
		c.answer("07-address-and-port.yaml", fmt.Sprintf("address: 192.168.49.2\nport: 10250\nissuer: %q\nsans: %q\nfix: %q\n", tt.issuer, tt.sans, tt.fix))
		passes(t, c.check(checkAddressAndPort), tt.issuer+" / "+tt.sans+" / "+tt.fix)
	}
	for _, tt := range []struct{ issuer, sans, fix, want string }{
		{selfSigned(t, now.Add(-48*time.Hour)), "DNS:minikube", "via-apiserver", "was not made by this node's kubelet"},
		{"CN = kubernetes", "DNS:minikube", "via-apiserver", "the kubelet signed it itself"},
		{selfSigned(t, made), "DNS:minikube, IP Address:192.168.49.2", "via-apiserver", "the host name only"},
		{selfSigned(t, made), "DNS:minikube", "turn TLS off", "fix: one way past"},
	} {
		c.answer("07-address-and-port.yaml", fmt.Sprintf("address: 192.168.49.2\nport: 10250\nissuer: %q\nsans: %q\nfix: %q\n", tt.issuer, tt.sans, tt.fix))
		fails(t, c.check(checkAddressAndPort), tt.want, tt.want)
	}
	c.answer("07-address-and-port.yaml", fmt.Sprintf("address: minikube\nport: 10255\nissuer: %q\nsans: DNS:minikube\nfix: via-apiserver\n", selfSigned(t, made)))
	r := c.check(checkAddressAndPort)
	fails(t, r, "address: the node's InternalIP", "the hostname is not what the client dials first")
	fails(t, r, "port: the one the kubelet reports", "the read-only port")
}

func TestTokenAndRBAC(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubelet-reader", Name: "kubelet-reader"}}
	answers := "beforeRBAC: 403\nafterRBAC: 200\nforbidden: 'Forbidden (user=system:serviceaccount:kubelet-reader:kubelet-reader, verb=get, resource=nodes, subresource(s)=[pods proxy])'\nnarrowest: %s\n"
	c := newCluster(t)
	c.answer("08-token-and-rbac.yaml", fmt.Sprintf(answers, "nodes/pods"))
	fails(t, c.check(checkTokenAndRBAC), "the ServiceAccount kubelet-reader/kubelet-reader", "no ServiceAccount")

	c = newCluster(t, sa)
	c.answer("08-token-and-rbac.yaml", fmt.Sprintf(answers, "pods"))
	fails(t, c.check(checkTokenAndRBAC), "get on nodes/pods", "no role bound")
	c.allowed["pods"] = true
	passes(t, c.check(checkTokenAndRBAC), "nodes/pods, named as the subresource alone")
	c.allowed["proxy"] = true
	fails(t, c.check(checkTokenAndRBAC), "no nodes/proxy for kubelet-reader", "more than /pods needs")
	c.allowed["proxy"] = false
	c.answer("08-token-and-rbac.yaml", fmt.Sprintf(answers, "nodes/proxy"))
	fails(t, c.check(checkTokenAndRBAC), "narrowest", "the wide one")
	c.answer("08-token-and-rbac.yaml", "beforeRBAC: 401\nafterRBAC: 200\nforbidden: 'Forbidden'\nnarrowest: nodes/pods\n")
	r := c.check(checkTokenAndRBAC)
	fails(t, r, "401 would mean", "a guessed status")
	fails(t, r, "word for word", "not the kubelet's words")
}

// servingCSR is a kubelet-serving CSR as the controller manager leaves it once approved and signed.
func servingCSR(t *testing.T, name string, approved bool) *certificatesv1.CertificateSigningRequest {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "system:node:minikube"},
		DNSNames: []string{"minikube"}, IPAddresses: []net.IP{net.ParseIP("192.168.49.2")}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, key)
	require.NoError(t, err)
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName, Username: "system:node:minikube"}}
	if approved {
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlApprove"}}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	return csr
}

func TestServingCertificate(t *testing.T) {
	c := newCluster(t, servingCSR(t, "csr-abcde", true), servingCSR(t, "csr-pending", false))
	for _, tt := range []struct{ csr, issuer, sans string }{
		{"csr-abcde", "issuer=CN = kubernetes", "DNS:minikube, IP Address:192.168.49.2"},
		{"certificatesigningrequest.certificates.k8s.io/csr-abcde", "kubernetes", "IP Address:192.168.49.2, DNS:minikube"},
	} {
		c.answer("09-serving-certificate.yaml", fmt.Sprintf("csr: %s\nissuer: %q\nsans: %q\n", tt.csr, tt.issuer, tt.sans))
		passes(t, c.check(checkServingCertificate), tt.csr)
	}
	c.answer("09-serving-certificate.yaml", "csr: csr-pending\nissuer: kubernetes\nsans: 'DNS:minikube, IP Address:192.168.49.2'\n")
	fails(t, c.check(checkServingCertificate), "nothing in the cluster approves", "not approved")
	c.answer("09-serving-certificate.yaml", "csr: csr-abcde\nissuer: kubernetes\nsans: 'DNS:minikube'\n")
	fails(t, c.check(checkServingCertificate), "an IP address among them", "the old certificate's names")
	c.answer("09-serving-certificate.yaml", "csr: csr-nope\nissuer: kubernetes\nsans: x\n")
	fails(t, c.check(checkServingCertificate), "no CertificateSigningRequest of this cluster", "a made-up name")
}

func TestNodeProxy(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubelet-reader", Name: "kubelet-reader"}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: proxyBinding}}
	pods, err := json.Marshal(corev1.PodList{Items: make([]corev1.Pod, 6)})
	require.NoError(t, err)

	c := newCluster(t, sa, binding)
	c.raw["/api/v1/nodes/minikube/proxy/pods"] = string(pods)
	c.allowed["pods"], c.allowed["proxy"] = true, true
	c.answer("10-node-proxy.yaml", "path: /api/v1/nodes/minikube/proxy/pods\npods: 6\nproxyNeeds: nodes/proxy\n")
	r := c.check(checkNodeProxy)
	fails(t, r, "the opt-in role removed again", "the role still bound")
	require.NoError(t, c.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), proxyBinding, metav1.DeleteOptions{}))
	fails(t, c.check(checkNodeProxy), "something else still grants it", "nodes/proxy granted some other way")
	c.allowed["proxy"] = false
	passes(t, c.check(checkNodeProxy), "removed")
	for _, path := range []string{"https://127.0.0.1:40211/api/v1/nodes/minikube/proxy/pods", "/api/v1/nodes/minikube/proxy/pods/"} {
		c.answer("10-node-proxy.yaml", fmt.Sprintf("path: %s\npods: 6\nproxyNeeds: proxy\n", path))
		passes(t, c.check(checkNodeProxy), path)
	}
	c.answer("10-node-proxy.yaml", "path: /api/v1/nodes/minikube/pods\npods: 7\nproxyNeeds: nodes/pods\n")
	r = c.check(checkNodeProxy)
	fails(t, r, "path: the apiserver path", "not the proxy's path")
	fails(t, r, "(6 now)", "another count")
	fails(t, r, "proxyNeeds", "the wrong permission")
}

func TestNormalizers(t *testing.T) {
	assert.Equal(t, []string{"192.168.49.2", "minikube"}, sanList("DNS:minikube, IP Address:192.168.49.2"))
	assert.Equal(t, []string{"minikube"}, sanList(`["DNS:minikube"]`))
	for in, want := range map[string]string{"--kubelet-ca-file": "ca", "kubelet-ca-file and kubelet-tls-server-name=Hostname": "ca",
		"--via=apiserver": "proxy", "kubelet.rotate-server-certificates": "csr", "serverTLSBootstrap": "csr"} {
		assert.Equal(t, want, fixes[normalizeFix(in)], in)
	}
	for _, s := range []string{"2026-11-30T19:28:46.343893Z", "2026-11-30T19:28:46Z", `"2026-11-30T19:28:46Z"`} {
		_, err := parseTime(s)
		assert.NoError(t, err, s)
	}
	assert.Equal(t, "/etc/kubernetes/manifests", normalize(" '/etc/kubernetes/manifests/' "))
}
