package minicluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// Should a kubelet end the process (os.Exit(1), realkubelet's lastwords.go), the cluster's
// directory (its CA and client keys, the admin kubeconfig, etcd's data) and the apiserver's
// temporary directories (its service account signing key; with a real apiserver, its own
// kubernetes-kube-apiserver* directory, which only its TearDownFn removes) are removed first.
// The moment is played in a process of its own, the test binary again: this one's shared
// cluster stays.
func TestLastWordsRemoveTheClustersFiles(t *testing.T) {
	if how := os.Getenv("MINICLUSTER_LAST_WORDS"); how != "" {
		c := &Cluster{tb: &programTB{}}
		require.NoError(t, c.makeDir())
		fmt.Println(c.Dir)
		fmt.Println(c.tb.TempDir())
		if how == "apiserver" {
			etcd, etcdURL, err := startEtcd(c.Dir)
			require.NoError(t, err)
			defer etcd.Close()
			storage := storagebackend.NewDefaultConfig("/registry", nil)
			storage.Transport.ServerList = []string{etcdURL}
			require.NoError(t, c.startAPIServer(storage, []string{"--anonymous-auth=false", "--authorization-mode=RBAC"}))
			require.DirExists(t, c.apiserver.TmpDir)
			fmt.Println(c.apiserver.TmpDir)
		}
		kubeletlog.LastWords("error: the kubelet ended this program")
		return
	}
	lastWords := func(t *testing.T, how string) []string {
		// Not t.TempDir(): etcd's unix sockets are made in there, and a socket's path is short.
		tmp, err := os.MkdirTemp("", "lastwords-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(tmp) })
		cmd := exec.Command(os.Args[0], "-test.run=^TestLastWordsRemoveTheClustersFiles$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MINICLUSTER_LAST_WORDS="+how, "TMPDIR="+tmp)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "%s%s", &stdout, &stderr)
		assert.Contains(t, stderr.String(), "error: the kubelet ended this program\n")
		var made []string
		for _, line := range strings.Split(stdout.String(), "\n") {
			if strings.HasPrefix(line, tmp) {
				made = append(made, filepath.Base(line))
				assert.NoDirExists(t, line)
			}
		}
		left, err := os.ReadDir(tmp)
		require.NoError(t, err)
		assert.Empty(t, left)
		return made
	}
	t.Run("the cluster's directory and the test server's", func(t *testing.T) {
		assert.Len(t, lastWords(t, "dirs"), 2)
	})
	t.Run("with a real apiserver", func(t *testing.T) {
		tier.Require(t, "private network", noNetns) // the apiserver listens on 127.0.0.1
		made := lastWords(t, "apiserver")
		require.Len(t, made, 3)
		assert.True(t, strings.HasPrefix(made[2], "kubernetes-kube-apiserver"), "the apiserver's own directory: %s", made[2])
	})
}
