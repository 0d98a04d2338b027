package kubeconfig

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/nobody"
)

// contextName names the cluster's context and cluster in these tests, as chapter 08 names its own;
// its user is contextName-admin.
const contextName = "walkthrough"

var ours = Names{Cluster: contextName, Context: contextName, User: contextName + "-admin"}

// Check refuses, before anything starts, a kubeconfig the cluster's entries cannot be merged into,
// with one line naming the flag and the file; it only reads.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	notYAML := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notYAML, []byte("my notes: [not yaml\n"), 0o600))
	notKubeconfig := filepath.Join(dir, "notes.yaml")
	require.NoError(t, os.WriteFile(notKubeconfig, []byte("mine: my notes\n"), 0o600))
	withOurs := filepath.Join(dir, "with-ours")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith(contextName, "https://192.0.2.9:6443"), withOurs))
	other := filepath.Join(dir, "other")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("minikube", "https://192.168.49.2:8443"), other))
	readable := filepath.Join(dir, "readable")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("minikube", "https://192.168.49.2:8443"), readable))
	require.NoError(t, os.Chmod(readable, 0o644))
	groupReadable := filepath.Join(dir, "group-readable")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("minikube", "https://192.168.49.2:8443"), groupReadable))
	require.NoError(t, os.Chmod(groupReadable, 0o640))

	tests := []struct{ name, path, want string }{
		{"a new kubeconfig", filepath.Join(dir, "new"), ""},
		{"a kubeconfig of other clusters", other, ""},
		{"a kubeconfig in no directory", filepath.Join(dir, "nope", "config"), "--kubeconfig " + filepath.Join(dir, "nope", "config") + ": its directory: "},
		{"a file that is no kubeconfig", notYAML, "--kubeconfig " + notYAML + ": not a kubeconfig (no kind: Config), so nothing is merged into it"},
		{"a YAML file that is no kubeconfig", notKubeconfig, "--kubeconfig " + notKubeconfig + ": not a kubeconfig (no kind: Config), so nothing is merged into it"},
		{"a kubeconfig with the cluster's names", withOurs, "--kubeconfig " + withOurs + `: it has a cluster "walkthrough" already (another mini-cluster's?)`},
		{"a kubeconfig other users can read", readable, "--kubeconfig " + readable + " is readable by other users (mode 0644); the cluster's admin key would be too: chmod 600 " + readable},
		{"a kubeconfig the group can read", groupReadable, "--kubeconfig " + groupReadable + " is readable by other users (mode 0640)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.path, ours)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
	for path, want := range map[string]string{notKubeconfig: "mine: my notes\n", notYAML: "my notes: [not yaml\n"} {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want, string(data), "Check only reads")
	}
	assert.NoFileExists(t, filepath.Join(dir, "new"), "Check only reads")
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
	gen := generated(t)
	t.Run("into the reader's kubeconfig, and out again", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		original := "# my clusters\n" + string(mustWrite(t, kubeconfigWith("minikube", "https://192.168.49.2:8443")))
		require.NoError(t, os.WriteFile(path, []byte(original), 0o600))

		unmerge, err := Merge(gen, path)
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
		assert.Equal(t, original, string(data), "what the merge added, and only that, is gone")
	})
	t.Run("the reader changed it meanwhile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, clientcmd.WriteToFile(*kubeconfigWith("minikube", "https://192.168.49.2:8443"), path))
		unmerge, err := Merge(gen, path)
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
		unmerge, err := Merge(gen, path)
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
		_, err := Merge(gen, path)
		assert.ErrorContains(t, err, `it has a cluster "walkthrough" already`)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(original), string(data))
	})
}

// A kubeconfig other users can read is refused, at the flag's check and again at the merge:
// the cluster's admin key would be theirs too while it runs.
func TestKubeconfigOthersCanReadIsRefused(t *testing.T) {
	gen := generated(t)
	path := filepath.Join(t.TempDir(), "config")
	original := mustWrite(t, kubeconfigWith("minikube", "https://192.168.49.2:8443"))
	require.NoError(t, os.WriteFile(path, original, 0o600))
	require.NoError(t, os.Chmod(path, 0o644))
	want := "--kubeconfig " + path + " is readable by other users (mode 0644); the cluster's admin key would be too: chmod 600 " + path
	assert.EqualError(t, Check(path, ours), want)
	_, err := Merge(gen, path)
	assert.EqualError(t, err, want)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(original), string(data), "nothing merged")

	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, Check(path, ours))
	unmerge, err := Merge(gen, path)
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
	assert.ErrorContains(t, Check(path, ours), "--kubeconfig "+path+": not yours to write (permission denied)")

	readOnly := filepath.Join(dir, "read-only")
	require.NoError(t, os.Mkdir(readOnly, 0o500))
	t.Cleanup(func() { _ = os.Chmod(readOnly, 0o700) })
	assert.ErrorContains(t, Check(filepath.Join(readOnly, "config"), ours), "its directory is not yours to write (permission denied)")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(original), string(data), "nothing written")
}

func mustWrite(t *testing.T, cfg *clientcmdapi.Config) []byte {
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

// Should a kubelet end the process (os.Exit(1), realkubelet's lastwords.go), no deferred
// function runs: the cluster's entries merged into the reader's --kubeconfig — an admin client
// key among them — come out first all the same. Played in a process of its own, the test
// binary again.
func TestLastWordsUnmergeTheKubeconfig(t *testing.T) {
	if path := os.Getenv("KUBECONFIG_UNMERGE"); path != "" {
		_, err := Merge(generated(t), path)
		require.NoError(t, err)
		kubeletlog.LastWords("error: the kubelet ended this program")
		return
	}
	path := filepath.Join(t.TempDir(), "config")
	original := "# my clusters\n" + string(mustWrite(t, kubeconfigWith("minikube", "https://192.168.49.2:8443")))
	require.NoError(t, os.WriteFile(path, []byte(original), 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^TestLastWordsUnmergeTheKubeconfig$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KUBECONFIG_UNMERGE="+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s%s", &stdout, &stderr)
	assert.Contains(t, stderr.String(), "error: the kubelet ended this program\n")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, original, string(data), "the reader's kubeconfig as it was")
}
