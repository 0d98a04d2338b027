package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExtraConfigSet pins the parsing of minikube's ExtraOptionSlice.Set: the component up to
// the first dot, the key up to the first equal sign, the rest the value.
func TestExtraConfigSet(t *testing.T) {
	tests := []struct {
		in      string
		want    ExtraOption
		wantErr string
	}{
		{"kubelet.max-pods=100", ExtraOption{"kubelet", "max-pods", "100"}, ""},
		{"kubelet.eviction-hard=memory.available<5%", ExtraOption{"kubelet", "eviction-hard", "memory.available<5%"}, ""},
		{"apiserver.oidc-issuer-url=https://x/?a=b", ExtraOption{"apiserver", "oidc-issuer-url", "https://x/?a=b"}, ""},
		{"a.b.c=d", ExtraOption{"a", "b.c", "d"}, ""},
		{"kubelet", ExtraOption{}, `must contain at least one period: "kubelet"`},
		{"kubelet.max-pods", ExtraOption{}, `must contain one equal sign: "kubelet.max-pods"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var c ExtraConfig
			err := c.Set(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, ExtraConfig{tt.want}, c)
		})
	}
}

func TestExtraConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    []string
		wantErr string
	}{
		{"every component minikube knows", []string{"kubelet.v=4", "apiserver.v=2", "controller-manager.v=2", "scheduler.v=2", "etcd.quota-backend-bytes=1", "kube-proxy.mode=iptables", "kubeadm.skip-phases=addon/kube-proxy", "kubeadm.pod-network-cidr=10.1.0.0/16"}, ""},
		{"proxy is not kube-proxy", []string{"proxy.mode=ipvs"}, "these --extra-config parameters are invalid: [proxy.mode=ipvs]"},
		{"a kubeadm key minikube does not pass on", []string{"kubeadm.token=abc"}, "the kubeadm.token parameter is currently not supported"},
		{"unknown kubelet keys pass: the kubelet refuses them", []string{"kubelet.no-such-flag=1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c ExtraConfig
			for _, o := range tt.opts {
				require.NoError(t, c.Set(o))
			}
			err := c.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

// TestKubeletFlags: minikube's routing of kubelet keys — flags sorted by key on the unit's
// command line, the last value of a key winning, the config-file keys kept off it.
func TestKubeletFlags(t *testing.T) {
	var c ExtraConfig
	for _, o := range []string{"kubelet.max-pods=50", "kubelet.v=2", "kubelet.max-pods=100", "kubelet.runtime-request-timeout=2m", "kubelet.serverTLSBootstrap=true", "kubelet.node-ip=10.0.0.9"} {
		require.NoError(t, c.Set(o))
	}
	assert.Equal(t, []string{
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
		"--config=/var/lib/kubelet/config.yaml",
		"--hostname-override=minikube",
		"--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--max-pods=100",
		"--node-ip=10.0.0.9",
		"--serverTLSBootstrap=true", // as minikube does: the kubelet will refuse this flag
		"--v=2",
	}, c.kubeletFlags("minikube", "192.168.49.2"))
	assert.Equal(t, map[string]string{"runtimeRequestTimeout": "2m"}, c.kubeletConfigFields())
}

func TestKubeadmInitFlags(t *testing.T) {
	var c ExtraConfig
	for _, o := range []string{"kubeadm.skip-phases=addon/kube-proxy", "kubeadm.ignore-preflight-errors=Mem", "kubeadm.pod-network-cidr=10.1.0.0/16"} {
		require.NoError(t, c.Set(o))
	}
	assert.Equal(t, []string{"--ignore-preflight-errors=Mem", "--skip-phases=addon/kube-proxy"}, c.kubeadmInitFlags())
}
