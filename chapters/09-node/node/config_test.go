package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/tier"
)

// fakeTree makes a root file system with Debian's merged /usr and a components directory, as
// far as nodeFiles looks at them.
func fakeTree(t *testing.T) (rootfs, components, dir string) {
	base := t.TempDir()
	rootfs, components, dir = filepath.Join(base, "rootfs"), filepath.Join(base, "components"), filepath.Join(base, "run")
	for _, d := range []string{rootfs + "/usr/lib", rootfs + "/usr/bin", rootfs + "/etc", components + "/cni", dir} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.Symlink("usr/lib", filepath.Join(rootfs, "lib")))
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		require.NoError(t, os.WriteFile(filepath.Join(components, "cni", p), nil, 0o755))
	}
	return rootfs, components, dir
}

func extra(t *testing.T, values ...string) ExtraConfig {
	var c ExtraConfig
	for _, v := range values {
		require.NoError(t, c.Set(v))
	}
	return c
}

// kubeadmDocuments splits the rendered kubeadm.yaml into its documents, by kind.
func kubeadmDocuments(t *testing.T, content string) map[string]map[string]any {
	docs := map[string]map[string]any{}
	for _, d := range strings.Split(content, "\n---\n") {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(d), &m), d)
		docs[m["kind"].(string)] = m
	}
	return docs
}

func TestNodeFiles(t *testing.T) {
	rootfs, components, dir := fakeTree(t)
	opts := Options{Hostname: "minikube", KubernetesVersion: "v1.37.2", Components: components,
		ExtraConfig: extra(t, "kubelet.max-pods=100", "kubeadm.pod-network-cidr=10.1.0.0/16", "apiserver.v=4", "kube-proxy.mode=iptables")}
	cfg := &launch{Dir: dir, Rootfs: rootfs, NodeIP: DefaultNodeIP, GatewayIP: DefaultGatewayIP, APIServerPort: APIServerPort}
	require.NoError(t, writeNodeFiles(opts, cfg))

	upper := filepath.Join(dir, "upper")
	assert.NoDirExists(t, filepath.Join(upper, "lib"), "a real /lib in the layer would hide Debian's /lib → usr/lib")
	dropIn, err := os.ReadFile(filepath.Join(upper, "etc/systemd/system/kubelet.service.d/10-kubeadm.conf"))
	require.NoError(t, err)
	assert.Contains(t, string(dropIn), "ExecStart=/var/lib/minikube/binaries/v1.37.2/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --config=/var/lib/kubelet/config.yaml --hostname-override=minikube --kubeconfig=/etc/kubernetes/kubelet.conf --max-pods=100 --node-ip=192.168.49.2\n")
	unit, err := os.ReadFile(filepath.Join(upper, "usr/lib/systemd/system/kubelet.service"))
	require.NoError(t, err)
	assert.Contains(t, string(unit), "RestartSec=600ms")
	link, err := os.Readlink(filepath.Join(upper, "var/lib/minikube/binaries/v1.37.2/kubeadm"))
	require.NoError(t, err)
	assert.Equal(t, "/opt/walkthrough/bin/kubeadm", link)

	data, err := os.ReadFile(filepath.Join(upper, "var/tmp/minikube/kubeadm.yaml"))
	require.NoError(t, err)
	docs := kubeadmDocuments(t, string(data))
	require.Len(t, docs, 4)
	cluster := docs["ClusterConfiguration"]
	assert.Equal(t, "control-plane.minikube.internal:8443", cluster["controlPlaneEndpoint"])
	assert.Equal(t, "/var/lib/minikube/certs", cluster["certificatesDir"])
	assert.Equal(t, "10.1.0.0/16", cluster["networking"].(map[string]any)["podSubnet"])
	assert.Equal(t, []any{
		map[string]any{"name": "enable-admission-plugins", "value": "NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,DefaultTolerationSeconds,NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota"},
		map[string]any{"name": "v", "value": "4"},
	}, cluster["apiServer"].(map[string]any)["extraArgs"])
	assert.Equal(t, "10.1.0.0/16", docs["KubeProxyConfiguration"]["clusterCIDR"])
	assert.Equal(t, "iptables", docs["KubeProxyConfiguration"]["mode"])
	kubelet := docs["KubeletConfiguration"]
	assert.Equal(t, "/etc/kubernetes/manifests", kubelet["staticPodPath"])
	assert.Equal(t, "hairpin-veth", kubelet["hairpinMode"])
	if CgroupV2() {
		assert.Equal(t, "systemd", kubelet["cgroupDriver"])
		assert.NotContains(t, kubelet, "failCgroupV1")
	} else {
		assert.Equal(t, "cgroupfs", kubelet["cgroupDriver"])
		assert.Equal(t, false, kubelet["failCgroupV1"])
	}
	cni, err := os.ReadFile(filepath.Join(upper, "etc/cni/net.d/1-k8s.conflist"))
	require.NoError(t, err)
	assert.Contains(t, string(cni), `"subnet": "10.1.0.0/16"`)
}

// TestKubeadmAcceptsTheConfiguration asks the real kubeadm, built for the node, whether the
// configuration written for it is valid.
func TestKubeadmAcceptsTheConfiguration(t *testing.T) {
	kubeadm, err := filepath.Abs("../../../.bin/node/bin/kubeadm")
	require.NoError(t, err)
	if _, err := os.Stat(kubeadm); err != nil {
		tier.Unavailable(t, "node", err)
	}
	rootfs, components, dir := fakeTree(t)
	opts := Options{Hostname: "minikube", KubernetesVersion: "v1.37.2", Components: components, ExtraConfig: extra(t, "etcd.quota-backend-bytes=8589934592")}
	cfg := &launch{Dir: dir, Rootfs: rootfs, NodeIP: DefaultNodeIP, GatewayIP: DefaultGatewayIP, APIServerPort: APIServerPort}
	require.NoError(t, writeNodeFiles(opts, cfg))
	out, err := exec.Command(kubeadm, "config", "validate", "--config", filepath.Join(dir, "upper/var/tmp/minikube/kubeadm.yaml")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "ok")
}
