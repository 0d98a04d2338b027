// Package minicluster runs a Kubernetes control plane and its nodes in one Go process, from
// real parts: an embedded etcd, the real kube-apiserver (through its own test server,
// k8s.io/kubernetes/cmd/kube-apiserver/app/testing) and one or more real kubelets from
// realkubelet. It is minikube without a VM or Docker: the kubelets register their Nodes,
// heartbeat, and mirror their static pods into the apiserver; `kubectl` reaches it through the
// kubeconfig it writes.
//
// The kubelets are configured as kubeadm (and so minikube) configures them: HTTPS on their port
// with a serving certificate for the node's IP, x509 client certificates plus webhook
// authentication (TokenReview) and webhook authorization (SubjectAccessReview) against this
// apiserver, anonymous requests refused, no read-only port. The apiserver reaches them with a
// kubelet client certificate bound to system:kubelet-api-admin, as kubeadm binds it.
//
// The kubelet refuses a loopback node IP and the apiserver refuses to proxy to one, so a node
// needs a real address of the machine; the support package netns gives a private one where the machine's
// own must not be used.
package minicluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/pki"
)

// Options describe the cluster to start.
type Options struct {
	// NodeNames are the kubelets to start, one per name. Default: one, realkubelet.DefaultNodeName.
	NodeNames []string
	// NodeIP is every kubelet's --node-ip and bind address: an address of this machine that is
	// not loopback (the kubelet refuses loopback, and the apiserver will not proxy to it). The
	// kubelets share it and differ by port.
	NodeIP string
	// StaticPodPath is every kubelet's static pod directory; empty for none.
	StaticPodPath string
	// Dir holds certificates, etcd's data, the kubeconfig and the kubelets' files. Default: a
	// temporary directory that Stop removes.
	Dir string
	// Kubeconfig is where the admin kubeconfig is written. Default: Dir/kubeconfig.
	Kubeconfig string
	// Context names the kubeconfig's context and cluster. Default "walkthrough".
	Context string
	// KubeconfigServer is the apiserver URL written into the kubeconfig, when its clients reach
	// it through a relay. Default: the apiserver's own (https://127.0.0.1:<port>).
	KubeconfigServer string
	// FileCheckFrequency is the kubelets' static pod re-list period; default 20s.
	FileCheckFrequency time.Duration
	// Dependencies, when set, may change each kubelet's dependencies last, before it starts
	// (realkubelet.Options.Dependencies): chapter 09 wraps the CRI runtime service this way.
	Dependencies func(node string, deps *kubelet.Dependencies)
	// Configure, when set, may change each kubelet's flags and configuration last, after the
	// cluster's own settings (realkubelet.Options.Configure): chapter 10 sets evictionHard this way.
	Configure func(node string, flags *options.KubeletFlags, config *kubeletconfig.KubeletConfiguration)
	// KubeletPort is the kubelets' HTTPS port; 0 picks a free one for each. A port asked for
	// serves one node only: the kubelets share NodeIP.
	KubeletPort int
}

// Node is one node of the cluster: a real kubelet with its own name and port.
type Node struct {
	Name    string
	IP      string
	Port    int
	Kubelet *realkubelet.Kubelet
	conns   *connrotation.Dialer
	stopped atomic.Bool
}

// Cluster is a running mini-cluster.
type Cluster struct {
	// Dir is the working directory; Kubeconfig the admin kubeconfig written in it.
	Dir, Kubeconfig string
	// CA signed every certificate of the cluster; CAFile is its certificate on disk.
	CA     *pki.CA
	CAFile string
	// Admin is a rest.Config for the admin user (group system:masters); Client uses it.
	Admin  *rest.Config
	Client clientset.Interface
	Nodes  []*Node

	opts       Options
	etcd       *embed.Etcd
	apiserver  kubeapiservertesting.TestServer
	tb         *programTB
	removeDir  bool
	unregister func()
}

// Start starts etcd, the apiserver and the kubelets, and returns once every kubelet serves.
// Nodes become Ready and mirror pods appear a few seconds later; see WaitForNodesReady and
// WaitForMirrorPods.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	logger := klog.FromContext(ctx)
	if len(opts.NodeNames) == 0 {
		opts.NodeNames = []string{realkubelet.DefaultNodeName}
	}
	if opts.Context == "" {
		opts.Context = "walkthrough"
	}
	if opts.NodeIP == "" {
		return nil, errors.New("a node IP is needed: the kubelet refuses loopback addresses; use an address of this machine, or a private network namespace (package netns)")
	}
	if err := CheckNodeIP("node IP", opts.NodeIP); err != nil {
		return nil, err
	}
	if opts.KubeletPort != 0 && len(opts.NodeNames) > 1 {
		return nil, fmt.Errorf("kubelet port %d: one port serves one node, and there are %d", opts.KubeletPort, len(opts.NodeNames))
	}
	c := &Cluster{opts: opts, Dir: opts.Dir, tb: &programTB{}}
	if c.Dir == "" {
		if err := c.makeDir(); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	c.Kubeconfig = opts.Kubeconfig
	if c.Kubeconfig == "" {
		c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	}

	certs, err := c.issueCertificates()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := c.startControlPlane(ctx, certs); err != nil {
		return nil, err
	}
	admin := certs.admin

	c.Admin = &rest.Config{Host: c.apiserver.ClientConfig.Host, TLSClientConfig: rest.TLSClientConfig{
		CAData: c.CA.CertPEM, CertData: admin.CertPEM, KeyData: admin.KeyPEM}}
	if c.Client, err = clientset.NewForConfig(c.Admin); err != nil {
		return nil, err
	}
	if err := c.writeKubeconfig(admin); err != nil {
		return nil, err
	}
	if err := c.bindKubeletAPIAdmin(ctx); err != nil {
		return nil, err
	}
	for _, name := range opts.NodeNames {
		node, err := c.startNode(ctx, name, certs.issue)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		c.Nodes = append(c.Nodes, node)
	}
	logger.V(1).Info("Kubelets started", "nodes", len(c.Nodes), "elapsed", time.Since(start))
	return c, nil
}

// certificates are the files and pairs the control plane and the kubelets are started with.
type certificates struct {
	issue                               issueFunc
	apiserverCert, apiserverKey         string
	kubeletClientCert, kubeletClientKey string
	admin                               pki.Pair
}

// issueCertificates makes the cluster's certificate authority and the control plane's
// certificates. One certificate authority signs everything: the apiserver's serving certificate,
// the clients' certificates (admin, nodes, the apiserver's own kubelet client) and the kubelets'
// serving certificates.
func (c *Cluster) issueCertificates() (certs certificates, err error) {
	pkiDir := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return certs, err
	}
	if c.CA, err = pki.NewCA("walkthrough-ca"); err != nil {
		return certs, err
	}
	if c.CAFile, err = c.CA.WriteCA(pkiDir, "ca"); err != nil {
		return certs, err
	}
	certs.issue = func(name string, r pki.Request) (string, string, pki.Pair, error) {
		pair, err := c.CA.Issue(r)
		if err != nil {
			return "", "", pair, err
		}
		cert, key, err := pair.Write(pkiDir, name)
		return cert, key, pair, err
	}
	certs.apiserverCert, certs.apiserverKey, _, err = certs.issue("apiserver", pki.Request{
		CommonName: "kube-apiserver", Server: true,
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPs:      []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	})
	if err != nil {
		return certs, err
	}
	// kubeadm's name for the apiserver's client certificate towards kubelets.
	certs.kubeletClientCert, certs.kubeletClientKey, _, err = certs.issue("apiserver-kubelet-client", pki.Request{CommonName: "kube-apiserver-kubelet-client", Client: true})
	if err != nil {
		return certs, err
	}
	_, _, certs.admin, err = certs.issue("admin", pki.Request{CommonName: "walkthrough-admin", Organizations: []string{"system:masters"}, Client: true})
	if err != nil {
		return certs, err
	}

	return certs, nil
}

// startControlPlane starts etcd, then kube-apiserver on it.
func (c *Cluster) startControlPlane(ctx context.Context, certs certificates) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	var etcdURL string
	var err error
	if c.etcd, etcdURL, err = startEtcd(c.Dir); err != nil {
		return err
	}
	logger.V(1).Info("etcd ready", "elapsed", time.Since(start))

	// EnableCertAuth stays off: it would point the peer proxy's CA (UnknownVersionInteroperabilityProxy,
	// on by default) at TmpDir/apiserver.crt, a file that exists only when the test server makes
	// its own serving certificate — and ours is given with --tls-cert-file.
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}
	err = c.startAPIServer(storage,
		[]string{
			"--authorization-mode=Node,RBAC",
			"--client-ca-file=" + c.CAFile,
			"--tls-cert-file=" + certs.apiserverCert, "--tls-private-key-file=" + certs.apiserverKey,
			"--kubelet-client-certificate=" + certs.kubeletClientCert, "--kubelet-client-key=" + certs.kubeletClientKey,
			"--kubelet-certificate-authority=" + c.CAFile,
			"--kubelet-preferred-address-types=InternalIP",
			"--enable-admission-plugins=NodeRestriction",
			"--disable-admission-plugins=ServiceAccount", // no service account controller runs here
			"--endpoint-reconciler-type=none",
		})
	if err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	logger.V(1).Info("kube-apiserver ready", "url", c.apiserver.ClientConfig.Host, "elapsed", time.Since(start))
	return nil
}

// makeDir makes the cluster's temporary directory, which Stop removes; its keys and etcd's data
// go too should a kubelet end the process (realkubelet's lastwords.go).
func (c *Cluster) makeDir() error {
	dir, err := os.MkdirTemp("", "minicluster-")
	if err != nil {
		return err
	}
	c.Dir, c.removeDir = dir, true
	c.unregister = kubeletlog.AtExit(func() { _ = os.RemoveAll(dir) })
	return nil
}

// startAPIServer starts the apiserver's test server. Its temporary directory
// ($TMPDIR/kubernetes-kube-apiserver*, its serving certificate's) goes only in its TearDownFn,
// which Stop runs: it is removed too should a kubelet end the process.
func (c *Cluster) startAPIServer(storage *storagebackend.Config, flags []string) error {
	server, err := kubeapiservertesting.StartTestServer(c.tb,
		&kubeapiservertesting.TestServerInstanceOptions{DisableInvariantChecks: true}, flags, storage)
	if err != nil {
		return err
	}
	c.apiserver = server
	if dir := server.TmpDir; dir != "" {
		// Unregistered in Stop, after TearDownFn: the programTB's cleanups run then.
		c.tb.Cleanup(kubeletlog.AtExit(func() { _ = os.RemoveAll(dir) }))
	}
	return nil
}

// CheckNodeIP refuses what the kubelet would refuse, with advice instead of a log line; name is
// what the reader called the address (a flag, or "node IP").
func CheckNodeIP(name, ip string) error {
	parsed := net.ParseIP(ip)
	switch {
	case parsed == nil:
		return fmt.Errorf("%s %q: not an IP address", name, ip)
	case parsed.IsLoopback() || !parsed.IsGlobalUnicast():
		return fmt.Errorf("%s %s: the kubelet refuses loopback, link-local and multicast node IPs (validateNodeIP), and the apiserver proxies only to global unicast ones; name an address of this machine's network", name, ip)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("%s %s: %w", name, ip, err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(parsed) {
			return nil
		}
	}
	return fmt.Errorf("%s %s: not an address of this machine (the kubelet checks its interfaces)", name, ip)
}

// writeKubeconfig writes the admin kubeconfig that kubectl and client-go read.
func (c *Cluster) writeKubeconfig(admin pki.Pair) error {
	name := c.opts.Context
	cfg := clientcmdapi.NewConfig()
	server := c.Admin.Host
	if c.opts.KubeconfigServer != "" {
		server = c.opts.KubeconfigServer
	}
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.CA.CertPEM}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: admin.CertPEM, ClientKeyData: admin.KeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, c.Kubeconfig)
}

// bindKubeletAPIAdmin lets the apiserver's kubelet client call the kubelets' API (node proxy,
// logs, exec): kubeadm creates this binding in `kubeadm init`; without it each kubelet answers
// the apiserver 403.
func (c *Cluster) bindKubeletAPIAdmin(ctx context.Context) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:apiserver-kubelet-client"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "kube-apiserver-kubelet-client"}},
	}
	_, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

type issueFunc func(name string, r pki.Request) (string, string, pki.Pair, error)

// startNode starts one real kubelet with its node credentials, as a kubeadm-joined node runs.
func (c *Cluster) startNode(ctx context.Context, name string, issue issueFunc) (*Node, error) {
	_, _, client, err := issue("node-"+name, pki.Request{CommonName: "system:node:" + name, Organizations: []string{"system:nodes"}, Client: true})
	if err != nil {
		return nil, err
	}
	servingCert, servingKey, _, err := issue("kubelet-"+name, pki.Request{CommonName: name, DNSNames: []string{name}, IPs: []net.IP{net.ParseIP(c.opts.NodeIP)}, Server: true})
	if err != nil {
		return nil, err
	}
	// The kubelet's connections go through a dialer that Stop can close: the kubelet does not
	// close its watches when its context ends, and open watches hold the apiserver's shutdown.
	node := &Node{Name: name, IP: c.opts.NodeIP}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	node.conns = connrotation.NewDialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		if node.stopped.Load() {
			return nil, errors.New("the node is stopped")
		}
		return dialer.DialContext(ctx, network, addr)
	})
	config := &rest.Config{
		Host:            c.Admin.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.CertPEM, CertData: client.CertPEM, KeyData: client.KeyPEM},
		Dial:            node.conns.DialContext,
		UserAgent:       "kubelet/" + name,
	}
	kubeClient, err := clientset.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	heartbeat := rest.CopyConfig(config)
	heartbeat.Timeout, heartbeat.QPS = 10*time.Second, -1 // as run() builds the heartbeat client
	heartbeatClient, err := clientset.NewForConfig(heartbeat)
	if err != nil {
		return nil, err
	}
	node.Kubelet, err = realkubelet.Start(ctx, realkubelet.Options{
		NodeName: name, NodeIP: c.opts.NodeIP, Address: c.opts.NodeIP,
		StaticPodPath: c.opts.StaticPodPath, FileCheckFrequency: c.opts.FileCheckFrequency,
		ReadOnlyPort: -1, SecurePort: c.opts.KubeletPort, TLSCertFile: servingCert, TLSKeyFile: servingKey,
		ClientCAFile: c.CAFile, Webhook: true,
		KubeClient: kubeClient, HeartbeatClient: heartbeatClient,
		Configure: func(flags *options.KubeletFlags, config *kubeletconfig.KubeletConfiguration) {
			// A denial is cached 30 s by default; a workshop that grants RBAC and tries again
			// should not wait that long.
			config.Authorization.Webhook.CacheUnauthorizedTTL.Duration = time.Second
			if c.opts.Configure != nil {
				c.opts.Configure(name, flags, config)
			}
		},
		Dependencies: func(deps *kubelet.Dependencies) {
			if c.opts.Dependencies != nil {
				c.opts.Dependencies(name, deps)
			}
		},
	})
	if err != nil {
		node.conns.CloseAll()
		return nil, err
	}
	node.Port = int(node.Kubelet.Config.Port)
	return node, nil
}

// Stop stops the kubelets, the apiserver and etcd, removes the working directory if Start made
// it, and last the kubelets' root directories once more (realkubelet.RemoveRootDirs).
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Kubelet.Stop()
		n.stopped.Store(true) // no new connections: the kubelet's informers would watch again
		n.conns.CloseAll()
	}
	if c.apiserver.TearDownFn != nil {
		c.apiserver.TearDownFn()
	}
	c.tb.runCleanups()
	if c.etcd != nil {
		c.etcd.Close()
	}
	if c.removeDir {
		_ = os.RemoveAll(c.Dir)
		c.unregister()
	}
	// The stopped kubelets' goroutines went on while the apiserver stopped, and may have made
	// their pods' directories again: removed last.
	realkubelet.RemoveRootDirs()
}

// WaitForNodesReady waits until every node is registered and Ready.
func (c *Cluster) WaitForNodesReady(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range c.Nodes {
			node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil || !ready(node) {
				return false, nil
			}
		}
		return true, nil
	})
}

func ready(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitForRunningMirrorPods waits until at least n mirror pods report the phase Running: the
// kubelet's status manager has written their status through the apiserver.
func (c *Cluster) WaitForRunningMirrorPods(ctx context.Context, n int) ([]corev1.Pod, error) {
	return c.waitForMirrorPods(ctx, n, corev1.PodRunning)
}

// waitForMirrorPods waits until the apiserver holds at least n mirror pods in phase (any phase: "").
func (c *Cluster) waitForMirrorPods(ctx context.Context, n int, phase corev1.PodPhase) ([]corev1.Pod, error) {
	var mirrors []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		mirrors = mirrors[:0]
		for _, p := range pods.Items {
			if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok && (phase == "" || p.Status.Phase == phase) {
				mirrors = append(mirrors, p)
			}
		}
		return len(mirrors) >= n, nil
	})
	return mirrors, err
}
