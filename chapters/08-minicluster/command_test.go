package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/nobody"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

// Every flag is checked before anything starts, with one line naming the flag and the value.
func TestValidate(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	require.NoError(t, os.WriteFile(existing, []byte("mine: my notes\n"), 0o644))
	notKubeconfig := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notKubeconfig, []byte("my notes: [not yaml\n"), 0o644))
	withOurs := filepath.Join(dir, "with-ours")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("walkthrough", "https://192.0.2.9:6443"), withOurs))
	other := filepath.Join(dir, "other")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("minikube", "https://192.168.49.2:8443"), other))
	readable := filepath.Join(dir, "readable")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("minikube", "https://192.168.49.2:8443"), readable))
	require.NoError(t, os.Chmod(readable, 0o644))
	groupReadable := filepath.Join(dir, "group-readable")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("minikube", "https://192.168.49.2:8443"), groupReadable))
	require.NoError(t, os.Chmod(groupReadable, 0o640))

	tests := []validtable.Case[clusterOptions]{
		{Name: "the defaults", Change: func(*clusterOptions) {}},
		{Name: "three nodes", Change: func(o *clusterOptions) { o.nodes, o.nodesSet = 3, true }},
		{Name: "named nodes", Change: func(o *clusterOptions) { o.nodeNames = []string{"a", "b"} }},
		{Name: "a new kubeconfig", Change: func(o *clusterOptions) { o.kubeconfig = filepath.Join(dir, "new") }},
		{Name: "a kubeconfig of other clusters", Change: func(o *clusterOptions) { o.kubeconfig = other }},
		{Name: "no nodes", Change: func(o *clusterOptions) { o.nodes = 0 }, WantErr: "--nodes 0: 1 to 10 (each node is a whole kubelet in this process)"},
		{Name: "negative nodes", Change: func(o *clusterOptions) { o.nodes = -2 }, WantErr: "--nodes -2: 1 to 10"},
		{Name: "a thousand nodes", Change: func(o *clusterOptions) { o.nodes = 1000 }, WantErr: "--nodes 1000: 1 to 10"},
		{Name: "--nodes and --node-names disagree", Change: func(o *clusterOptions) { o.nodes, o.nodesSet, o.nodeNames = 3, true, []string{"a", "b"} }, WantErr: "--nodes 3 and --node-names a,b (2 names): give one of them"},
		{Name: "a duplicate name", Change: func(o *clusterOptions) { o.nodeNames = []string{"a", "b", "a"} }, WantErr: `--node-names a,b,a: "a" twice`},
		{Name: "an upper-case name", Change: func(o *clusterOptions) { o.nodeNames = []string{"Node1"} }, WantErr: `--node-names "Node1": a lowercase RFC 1123 subdomain`},
		{Name: "an empty name", Change: func(o *clusterOptions) { o.nodeNames = []string{"a", ""} }, WantErr: `--node-names "": must not be empty`},
		{Name: "too many names", Change: func(o *clusterOptions) { o.nodeNames = strings.Split("a,b,c,d,e,f,g,h,i,j,k", ",") }, WantErr: "--node-names a,b,c,d,e,f,g,h,i,j,k: at most 10 nodes"},
		{Name: "a node IP that is no IP", Change: func(o *clusterOptions) { o.nodeIP = "node1" }, WantErr: `--node-ip "node1": not an IP address`},
		{Name: "a loopback node IP", Change: func(o *clusterOptions) { o.nodeIP = "127.0.0.1" }, WantErr: "--node-ip 127.0.0.1: the kubelet refuses loopback"},
		{Name: "a node IP not of this machine", Change: func(o *clusterOptions) { o.nodeIP = "192.0.2.1" }, WantErr: "--node-ip 192.0.2.1: not an address of this machine (the kubelet checks its interfaces)"},
		{Name: "a kubeconfig in no directory", Change: func(o *clusterOptions) { o.kubeconfig = filepath.Join(dir, "nope", "config") }, WantErr: "--kubeconfig " + filepath.Join(dir, "nope", "config") + ": its directory: "},
		{Name: "a file that is no kubeconfig", Change: func(o *clusterOptions) { o.kubeconfig = notKubeconfig }, WantErr: "--kubeconfig " + notKubeconfig + ": not a kubeconfig (no kind: Config), so nothing is merged into it"},
		{Name: "a YAML file that is no kubeconfig", Change: func(o *clusterOptions) { o.kubeconfig = existing }, WantErr: "--kubeconfig " + existing + ": not a kubeconfig (no kind: Config), so nothing is merged into it"},
		{Name: "a kubeconfig with our names", Change: func(o *clusterOptions) { o.kubeconfig = withOurs }, WantErr: "--kubeconfig " + withOurs + `: it has a cluster "walkthrough" already (another mini-cluster's?)`},
		{Name: "a kubeconfig other users can read", Change: func(o *clusterOptions) { o.kubeconfig = readable }, WantErr: "--kubeconfig " + readable + " is readable by other users (mode 0644); the cluster's admin key would be too: chmod 600 " + readable},
		{Name: "a kubeconfig the group can read", Change: func(o *clusterOptions) { o.kubeconfig = groupReadable }, WantErr: "--kubeconfig " + groupReadable + " is readable by other users (mode 0640)"},
		{Name: "a log that exists", Change: func(o *clusterOptions) { o.kubeletLog = existing }, WantErr: "--log " + existing + ": the file exists; name a new one (it is never overwritten)"},
		{Name: "a new Pods API link", Change: func(o *clusterOptions) { o.podsAPILink = filepath.Join(dir, "pods-api.sock") }},
		{Name: "a Pods API link where a file is", Change: func(o *clusterOptions) { o.podsAPILink = existing }, WantErr: "--pods-api-link " + existing + ": the file exists; name a new one (it is never overwritten)"},
		{Name: "an apiserver port out of range", Change: func(o *clusterOptions) { o.apiserverPort = 70000 }, WantErr: "--apiserver-port 70000: a port is 0 (pick a free one) or 1 to 65535"},
		{Name: "an apiserver port with a node IP", Change: func(o *clusterOptions) { o.nodeIP, o.apiserverPort = "192.0.2.1", 6443 }, WantErr: "--apiserver-port 6443: only in the private network namespace (with --node-ip, kubectl reaches the apiserver at the node IP)"},
	}
	validtable.Run(t, func() *clusterOptions { return &clusterOptions{nodes: 1} }, (*clusterOptions).validate, tests)
	for path, want := range map[string]string{existing: "mine: my notes\n", notKubeconfig: "my notes: [not yaml\n"} {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want, string(data), "validate only reads")
	}
}

// kubeconfigWith is a kubeconfig with one cluster, user and context, all named name.
func kubeconfigWith(name, server string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: []byte("ca of " + name)}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert of " + name)}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return cfg
}

// generated is a kubeconfig as the mini-cluster writes it.
func generated(t *testing.T) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:40123", CertificateAuthorityData: []byte("our ca")}
	cfg.AuthInfos[contextName+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("our cert"), ClientKeyData: []byte("our key")}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName + "-admin"}
	cfg.CurrentContext = contextName
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// A kubeconfig the reader names gets the cluster's entries merged in, as minikube merges its
// own, and loses exactly those on exit: the reader's file is then as it was, byte for byte.
func TestMergeKubeconfig(t *testing.T) {
	ours := generated(t)
	t.Run("into the reader's kubeconfig, and out again", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		original := "# my clusters\n" + string(mustWrite(t, kubeconfigWith("minikube", "https://192.168.49.2:8443")))
		require.NoError(t, os.WriteFile(path, []byte(original), 0o600))

		unmerge, err := mergeKubeconfig(ours, path)
		require.NoError(t, err)
		merged, err := clientcmd.LoadFromFile(path)
		require.NoError(t, err)
		assert.Equal(t, contextName, merged.CurrentContext, "kubectl --kubeconfig FILE reaches the mini-cluster")
		assert.Contains(t, merged.Contexts, "minikube", "the reader's entries stay")
		assert.Contains(t, merged.Clusters, contextName)
		config, err := clientcmd.BuildConfigFromFlags("", path)
		require.NoError(t, err)
		assert.Equal(t, "https://127.0.0.1:40123", config.Host)

		require.NoError(t, unmerge())
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, original, string(data), "what the chapter added, and only that, is gone")
	})
	t.Run("the reader changed it meanwhile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("minikube", "https://192.168.49.2:8443"), path))
		unmerge, err := mergeKubeconfig(ours, path)
		require.NoError(t, err)
		meanwhile, err := clientcmd.LoadFromFile(path)
		require.NoError(t, err)
		meanwhile.Contexts["mine"] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName + "-admin", Namespace: "kube-system"}
		require.NoError(t, clientcmd.WriteToFile(*meanwhile, path))

		require.NoError(t, unmerge())
		after, err := clientcmd.LoadFromFile(path)
		require.NoError(t, err)
		assert.Equal(t, "minikube", after.CurrentContext, "the current context is the reader's again")
		assert.Contains(t, after.Contexts, "mine", "what the reader added stays")
		assert.Contains(t, after.Contexts, "minikube")
		assert.NotContains(t, after.Contexts, contextName)
		assert.NotContains(t, after.Clusters, contextName)
	})
	t.Run("a new file, the reader's alone, removed on exit", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		unmerge, err := mergeKubeconfig(ours, path)
		require.NoError(t, err)
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the admin key is in it")
		require.NoError(t, unmerge())
		assert.NoFileExists(t, path)
	})
	t.Run("a kubeconfig with the cluster's names is refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		original := mustWrite(t, kubeconfigWith(contextName, "https://192.0.2.9:6443"))
		require.NoError(t, os.WriteFile(path, original, 0o600))
		_, err := mergeKubeconfig(ours, path)
		assert.ErrorContains(t, err, `it has a cluster "walkthrough" already`)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(original), string(data))
	})
}

// A kubeconfig other users can read is refused, at the flag's check and again at the merge:
// the cluster's admin key would be theirs too while it runs.
func TestKubeconfigOthersCanReadIsRefused(t *testing.T) {
	ours := generated(t)
	path := filepath.Join(t.TempDir(), "config")
	original := mustWrite(t, kubeconfigWith("minikube", "https://192.168.49.2:8443"))
	require.NoError(t, os.WriteFile(path, original, 0o600))
	require.NoError(t, os.Chmod(path, 0o644))
	want := "--kubeconfig " + path + " is readable by other users (mode 0644); the cluster's admin key would be too: chmod 600 " + path
	assert.EqualError(t, checkKubeconfig(path), want)
	_, err := mergeKubeconfig(ours, path)
	assert.EqualError(t, err, want)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(original), string(data), "nothing merged")

	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, checkKubeconfig(path))
	unmerge, err := mergeKubeconfig(ours, path)
	require.NoError(t, err)
	require.NoError(t, unmerge())
}

// A kubeconfig, or a directory for a new one, that this user may not write is refused before the
// cluster starts, not when the merge fails after it did. Root writes anything: as root the test
// runs again as nobody.
func TestKubeconfigNotYoursToWriteIsRefused(t *testing.T) {
	if nobody.Rerun(t) {
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	original := mustWrite(t, kubeconfigWith("minikube", "https://192.168.49.2:8443"))
	require.NoError(t, os.WriteFile(path, original, 0o400))
	assert.ErrorContains(t, checkKubeconfig(path), "--kubeconfig "+path+": not yours to write (permission denied)")

	readOnly := filepath.Join(dir, "read-only")
	require.NoError(t, os.Mkdir(readOnly, 0o500))
	t.Cleanup(func() { _ = os.Chmod(readOnly, 0o700) })
	assert.ErrorContains(t, checkKubeconfig(filepath.Join(readOnly, "config")), "its directory is not yours to write (permission denied)")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(original), string(data), "nothing written")
}

func mustWrite(t *testing.T, cfg *clientcmdapi.Config) []byte {
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

// --pods-api-link: a link to the kubelet's socket under its root directory, removed by what
// linkPodsAPI returns — unless it is no longer that link.
func TestLinkPodsAPI(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "pods-api.sock")
	unlink, err := linkPodsAPI("/root-dir", link)
	require.NoError(t, err)
	target, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, "/root-dir/pods-api/pods-api.sock", target)
	unlink()
	assert.NoFileExists(t, link)

	unlink, err = linkPodsAPI("/root-dir", link)
	require.NoError(t, err)
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("/elsewhere", link)) // the reader's own now
	unlink()
	target, err = os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, "/elsewhere", target, "a link that is no longer ours stays")

	_, err = linkPodsAPI("/root-dir", link)
	assert.ErrorContains(t, err, "--pods-api-link: ")
}
