package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The test runs the chapter as its own process; a kubelet started in this one would be removed last.
func TestMain(m *testing.M) {
	code := m.Run()
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The chapter's promise: run it, then point kubectl at the kubeconfig it printed, from this
// machine's network, through the relay into the cluster's private network namespace.
func TestKubectlReachesTheCluster(t *testing.T) {
	tier.Require(t, "private network", netns.Available())
	bin := filepath.Join(t.TempDir(), "minicluster")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")

	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--static-pod-path", repo.Path("examples", "static-pods"))
	var output lockedBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	cmd.WaitDelay = 10 * time.Second
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Signal(syscall.SIGINT); _ = cmd.Wait() }()
	require.Eventually(t, func() bool { return strings.Contains(output.String(), "until Ctrl-C") }, 3*time.Minute, 100*time.Millisecond, "%s", &output) // &output: what it holds when the wait gives up
	if strings.Contains(output.String(), "this machine's network") {
		t.Fatal("the chapter must default to a private network namespace")
	}

	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(config.Host, "https://127.0.0.1:"), "the relay listens on loopback: %s", config.Host)
	client, err := kubernetes.NewForConfig(config)
	require.NoError(t, err)
	pods, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var mirrors []string
	for _, p := range pods.Items {
		if _, ok := p.Annotations["kubernetes.io/config.mirror"]; ok {
			mirrors = append(mirrors, p.Namespace+"/"+p.Name)
		}
	}
	assert.ElementsMatch(t, []string{"default/web-walkthrough", "kube-system/etcd-walkthrough", "kube-system/kube-apiserver-walkthrough",
		"kube-system/kube-controller-manager-walkthrough", "kube-system/kube-scheduler-walkthrough"}, mirrors)

	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		// kubectl keeps its discovery and HTTP caches in ~/.kube/cache unless told otherwise: the
		// reader's home is not the test's to change.
		out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "--cache-dir", t.TempDir(), "get", "pods", "-A").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "kube-apiserver-walkthrough")
	} else {
		t.Log("no kubectl on PATH: checked with client-go only")
	}
}
