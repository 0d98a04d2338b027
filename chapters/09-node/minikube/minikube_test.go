package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// minikube cp's rule for NODE:PATH (cmd/minikube/cmd/cp.go, newRemotePath).
func TestParseRemotePath(t *testing.T) {
	tests := []struct {
		in   string
		want remotePath
	}{
		{"minikube:/etc/kubernetes/manifests/a.yaml", remotePath{"minikube", "/etc/kubernetes/manifests/a.yaml"}},
		{"/etc/kubernetes/manifests/a.yaml", remotePath{"", "/etc/kubernetes/manifests/a.yaml"}},
		{"examples/a:b.yaml", remotePath{"", "examples/a:b.yaml"}},           // a slash before the colon: local
		{"minikube:relative/path", remotePath{"", "minikube:relative/path"}}, // not absolute: local
		{"C:/Users/me/a.yaml", remotePath{"C", "/Users/me/a.yaml"}},          // as minikube reads it, on Linux
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, parseRemotePath(tt.in), tt.in)
	}
}

func TestJoinArgs(t *testing.T) {
	// minikube ssh -- sudo cat '/etc/a b' reaches the node as the string below, which bash splits again.
	assert.Equal(t, "sudo cat /etc/a b", joinArgs([]string{"sudo", "cat", "/etc/a b"}))
}

func TestNormalizeVersion(t *testing.T) {
	for in, want := range map[string]string{"1.37.2": "v1.37.2", "v1.37.2": "v1.37.2", "": ""} {
		assert.Equal(t, want, normalizeVersion(in))
	}
}

// The kubeconfig minikube writes: entries named after the profile, certificates in files, the
// context current and the user's other entries kept; delete removes only the profile's.
func TestKubeconfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("MINIKUBE_HOME", home)
	kubeconfig := filepath.Join(home, "kube", "config")
	t.Setenv("KUBECONFIG", kubeconfig)
	other := clientcmdapi.NewConfig()
	other.Clusters["prod"] = &clientcmdapi.Cluster{Server: "https://prod:6443"}
	other.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod"}
	other.CurrentContext = "prod"
	require.NoError(t, os.MkdirAll(filepath.Dir(kubeconfig), 0o755))
	require.NoError(t, clientcmd.WriteToFile(*other, kubeconfig))

	p, err := minikubePaths()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".minikube"), p.home)
	admin := clientcmdapi.NewConfig()
	admin.Clusters["minikube"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:40000", CertificateAuthorityData: []byte("CA")}
	admin.AuthInfos["minikube"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("CERT"), ClientKeyData: []byte("KEY")}
	path, err := p.updateKubeconfig("minikube", admin, "v1.37.0-walkthrough")
	require.NoError(t, err)
	assert.Equal(t, kubeconfig, path)

	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "minikube", cfg.CurrentContext)
	assert.Equal(t, "https://127.0.0.1:40000", cfg.Clusters["minikube"].Server)
	assert.Equal(t, filepath.Join(home, ".minikube", "ca.crt"), cfg.Clusters["minikube"].CertificateAuthority)
	assert.Equal(t, filepath.Join(home, ".minikube", "profiles", "minikube", "client.key"), cfg.AuthInfos["minikube"].ClientKey)
	assert.Contains(t, cfg.Clusters, "prod", "the user's other clusters stay")
	key, err := os.Stat(cfg.AuthInfos["minikube"].ClientKey)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), key.Mode().Perm())

	require.NoError(t, removeFromKubeconfig("minikube"))
	cfg, err = clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	assert.NotContains(t, cfg.Clusters, "minikube")
	assert.Contains(t, cfg.Clusters, "prod")
	assert.Empty(t, cfg.CurrentContext)
}
