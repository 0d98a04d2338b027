package minicluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/kubeletlog"
)

// Should a kubelet end the process (os.Exit(1), realkubelet's lastwords.go), the cluster's
// directory (its CA and client keys, the admin kubeconfig, etcd's data) and the apiserver's
// temporary directories (its service account signing key) are removed first. The moment is
// played in a process of its own, the test binary again: this one's shared cluster stays.
func TestLastWordsRemoveTheClustersFiles(t *testing.T) {
	if os.Getenv("MINICLUSTER_LAST_WORDS") != "" {
		c := &Cluster{tb: &programTB{}}
		require.NoError(t, c.makeDir())
		fmt.Println(c.Dir)
		fmt.Println(c.tb.TempDir())
		kubeletlog.LastWords("error: the kubelet ended this program")
		return
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLastWordsRemoveTheClustersFiles$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MINICLUSTER_LAST_WORDS=1", "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s%s", &stdout, &stderr)
	assert.Contains(t, stderr.String(), "error: the kubelet ended this program\n")
	var made int
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(line, tmp) {
			made++
			assert.NoDirExists(t, line)
		}
	}
	assert.Equal(t, 2, made, "%s", &stdout)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left)
}
