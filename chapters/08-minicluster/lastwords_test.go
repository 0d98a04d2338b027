package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
)

// Should a kubelet end the process (os.Exit(1), realkubelet's lastwords.go), no deferred
// function runs: the cluster's entries merged into the reader's --kubeconfig — an admin client
// key among them — come out first all the same. Played in a process of its own, the test
// binary again.
func TestLastWordsUnmergeTheKubeconfig(t *testing.T) {
	if path := os.Getenv("MINICLUSTER_UNMERGE"); path != "" {
		_, err := mergeKubeconfig(generated(t), path)
		require.NoError(t, err)
		kubeletlog.LastWords("error: the kubelet ended this program")
		return
	}
	path := filepath.Join(t.TempDir(), "config")
	original := "# my clusters\n" + string(mustWrite(t, kubeconfigWith("minikube", "https://192.168.49.2:8443")))
	require.NoError(t, os.WriteFile(path, []byte(original), 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^TestLastWordsUnmergeTheKubeconfig$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MINICLUSTER_UNMERGE="+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s%s", &stdout, &stderr)
	assert.Contains(t, stderr.String(), "error: the kubelet ended this program\n")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, original, string(data), "the reader's kubeconfig as it was")
}
