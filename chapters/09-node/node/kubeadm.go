package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// What minikube does once its node container runs (pkg/minikube/bootstrapper/kubeadm/kubeadm.go,
// StartCluster → init): load the images, run `kubeadm init` with its configuration, then label
// the node, bind cluster-admin for kube-system's default ServiceAccount and scale CoreDNS to one
// replica (pkg/minikube/node/start.go).

// preflightIgnored are the preflight errors minikube tells kubeadm to ignore on the Docker
// driver (bootstrapper/kubeadm/kubeadm.go, init; bsutil/kubeadm.go, SkipAdditionalPreflights).
var preflightIgnored = []string{
	"DirAvailable--etc-kubernetes-manifests", "DirAvailable--var-lib-minikube", "DirAvailable--var-lib-minikube-etcd",
	"FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml", "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
	"FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml", "FileAvailable--etc-kubernetes-manifests-etcd.yaml",
	"Port-10250", "Swap", "NumCPU", "Mem", "SystemVerification", "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables",
}

// Bootstrap makes the node a one-node cluster as `minikube start` does, and returns once the
// Node is Ready and the control plane's mirror pods run.
func (n *Node) Bootstrap(ctx context.Context) error {
	log := n.opts.Log
	start := n.started
	if start.IsZero() {
		start = time.Now()
	}
	step := func(milestone *time.Duration, format string, args ...any) {
		*milestone = time.Since(start)
		fmt.Fprintf(log, "[%5.1fs] %s\n", milestone.Seconds(), fmt.Sprintf(format, args...))
	}
	if err := n.waitForContainerd(ctx); err != nil {
		return err
	}
	images, err := filepath.Glob(filepath.Join(n.opts.Components, "image-archives", "*.tar"))
	if err != nil || len(images) == 0 {
		return fmt.Errorf("no image archives in %s (make node-components)", filepath.Join(n.opts.Components, "image-archives"))
	}
	for _, img := range images {
		inNode := filepath.Join(componentsInNode, "image-archives", filepath.Base(img))
		if _, err := n.Output(ctx, "ctr", "--namespace", "k8s.io", "images", "import", inNode); err != nil {
			return fmt.Errorf("import %s: %w", filepath.Base(img), err)
		}
	}
	step(&n.Timings.ImagesLoaded, "containerd has the %d images kubeadm asks for, built here (no registry)", len(images))

	args := []string{"env", "PATH=" + versionDir(n.opts.KubernetesVersion) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"kubeadm", "init", "--config", "/var/tmp/minikube/kubeadm.yaml"}
	args = append(args, n.opts.ExtraConfig.kubeadmInitFlags()...)
	args = append(args, "--ignore-preflight-errors="+strings.Join(preflightIgnored, ","))
	out, err := n.Command(ctx, args...).CombinedOutput()
	if werr := os.WriteFile(filepath.Join(n.dir(), "kubeadm-init.log"), out, 0o644); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("kubeadm init: %w\n%s", err, lastLines(string(out), 30))
	}
	step(&n.Timings.KubeadmDone, "kubeadm init done: certificates, kubeconfigs, static pod manifests, the kubelet restarted with them")

	kubectl := func(args ...string) ([]byte, error) {
		return n.Output(ctx, append([]string{versionDir(n.opts.KubernetesVersion) + "/kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"}, args...)...)
	}
	// minikube's own touches (node/start.go: labelAndUntaintNode, elevateKubeSystemPrivileges;
	// kapi.ScaleDeployment "coredns" to 1).
	now := time.Now().UTC().Format("2006_01_02T15_04_05_0700")
	for _, a := range [][]string{
		{"label", "node", n.opts.Hostname, "--overwrite", "minikube.k8s.io/name=" + n.opts.Hostname, "minikube.k8s.io/primary=true", "minikube.k8s.io/updated_at=" + now},
		{"create", "clusterrolebinding", "minikube-rbac", "--clusterrole=cluster-admin", "--serviceaccount=kube-system:default"},
		{"--namespace=kube-system", "scale", "deployment", "coredns", "--replicas=1"},
	} {
		if _, err := kubectl(a...); err != nil {
			return err
		}
	}
	if err := n.WaitUntilReady(ctx); err != nil {
		return err
	}
	step(&n.Timings.Ready, "node %s Ready; etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy and CoreDNS Ready", n.hostname())
	return nil
}

// PeakMemory is the most memory the node's processes have used at once, page cache included, as
// its memory cgroup counts it (cgroup v1: memory.max_usage_in_bytes; v2: memory.peak).
func (n *Node) PeakMemory() (uint64, error) {
	cfg, err := readLaunch(n.dir())
	if err != nil {
		return 0, err
	}
	for _, h := range cfg.Cgroups {
		file := ""
		switch {
		case h.V2 && h.Name == "":
			file = "memory.peak"
		case strings.Contains(h.Options, "memory"):
			file = "memory.max_usage_in_bytes"
		default:
			continue
		}
		data, err := os.ReadFile(filepath.Join(h.Dir, file))
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	}
	return 0, fmt.Errorf("no memory cgroup for the node")
}

// WaitUntilReady waits until the Node is Ready and every kube-system pod a fresh minikube shows
// is Ready too: the control plane's four static pods, kube-proxy and CoreDNS.
func (n *Node) WaitUntilReady(ctx context.Context) error {
	kubectl := func(args ...string) ([]byte, error) {
		return n.Output(ctx, append([]string{versionDir(n.opts.KubernetesVersion) + "/kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"}, args...)...)
	}
	want := []string{"etcd-", "kube-apiserver-", "kube-controller-manager-", "kube-scheduler-", "kube-proxy-", "coredns-"}
	return n.waitFor(ctx, "the node Ready and kube-system's pods Ready", 3*time.Minute, func() (bool, error) {
		out, err := kubectl("get", "node", n.hostname(), "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || strings.TrimSpace(string(out)) != "True" {
			return false, nil
		}
		out, err = kubectl("get", "pods", "--namespace=kube-system", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if err != nil {
			return false, nil
		}
		ready := map[string]bool{}
		for _, line := range strings.Fields(string(out)) {
			name, status, _ := strings.Cut(line, "=")
			for _, prefix := range want {
				if strings.HasPrefix(name, prefix) && status == "True" {
					ready[prefix] = true
				}
			}
		}
		return len(ready) == len(want), nil
	})
}

// waitForContainerd waits until containerd answers on its socket.
func (n *Node) waitForContainerd(ctx context.Context) error {
	return n.waitFor(ctx, "containerd", time.Minute, func() (bool, error) {
		_, err := n.Output(ctx, "ctr", "version")
		return err == nil, nil
	})
}

// waitFor polls done until it says yes, fails, or timeout passes.
func (n *Node) waitFor(ctx context.Context, what string, timeout time.Duration, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if !n.State.Running() {
			return fmt.Errorf("the node stopped while waiting for %s", what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// AdminKubeconfig returns kubeadm's admin kubeconfig, named and addressed as minikube writes
// its own for a Docker driver that publishes the apiserver's port (macOS, Windows): cluster,
// context and user "minikube", server https://127.0.0.1:<port>. The apiserver's certificate
// names 127.0.0.1 (minikube's certSANs).
func (n *Node) AdminKubeconfig(ctx context.Context) (*clientcmdapi.Config, error) {
	data, err := n.Output(ctx, "cat", "/etc/kubernetes/admin.conf")
	if err != nil {
		return nil, err
	}
	admin, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("the node's admin.conf: %w", err)
	}
	kctx, ok := admin.Contexts[admin.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("the node's admin.conf has no current context")
	}
	cluster, user := admin.Clusters[kctx.Cluster], admin.AuthInfos[kctx.AuthInfo]
	if cluster == nil || user == nil {
		return nil, fmt.Errorf("the node's admin.conf: context %q names no cluster or user", admin.CurrentContext)
	}
	name := n.opts.Hostname
	if name == "" {
		name = DefaultHostname
	}
	cluster.Server = n.APIServer
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = cluster
	cfg.AuthInfos[name] = user
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	return cfg, nil
}
