package clientnode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// podsAPIImage is the client's image as examples/rbac/Dockerfile builds it, under a tag of this
// test's: examples/rbac's own DaemonSet must go on waiting for kubelet-walkthrough/client:dev
// (TestTableAgreesWithKubectl).
const podsAPIImage = "kubelet-walkthrough/client:pods-api-test"

// The DaemonSet of examples/rbac/pods-api on a real node, as its comment says to run it: the
// client built, its image built in minikube, the DaemonSet applied. Its pod reads its own node's
// pods from the kubelet's Pods API socket — with no token mounted, as root, through the
// hostPath — and follows them with WatchPods: a pod created on the node shows in its log, then
// goes.
func TestPodsAPIDaemonSet(t *testing.T) {
	f := nodeFixture(t)

	// CGO_ENABLED=0 GOOS=linux go build -o .bin/kubelet-client ./examples/kubelet-pods, and
	// minikube image build -f examples/rbac/Dockerfile, in a context of its own.
	buildDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(buildDir, ".bin", "kubelet-client"), "./examples/kubelet-pods")
	build.Dir, build.Env = repoRoot, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	dockerfile, err := os.ReadFile(filepath.Join(rbacDir, "Dockerfile"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(buildDir, "Dockerfile"), dockerfile, 0o644))
	r := f.runProgram(t, "minikube", "image", "build", "-t", podsAPIImage, "-f", "Dockerfile", buildDir)
	require.Zero(t, r.code, "minikube image build: %s", r)
	t.Cleanup(func() { f.runProgram(t, "minikube", "image", "rm", podsAPIImage) })

	manifest, err := os.ReadFile(repo.Path("examples", "rbac", "pods-api", "daemonset.yaml"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(manifest), "image: kubelet-walkthrough/client:dev"), "the DaemonSet runs the image its comment builds")
	applied := filepath.Join(t.TempDir(), "daemonset.yaml")
	require.NoError(t, os.WriteFile(applied, []byte(strings.Replace(string(manifest), "image: kubelet-walkthrough/client:dev", "image: "+podsAPIImage, 1)), 0o644))
	f.kubectl(t, "apply", "-f", applied)
	t.Cleanup(func() { f.kubectl(t, "delete", "-f", applied, "--wait", "--timeout=2m") })
	if r := f.kubectlResult(t, "-n", "kubelet-pods-api", "rollout", "status", "ds/kubelet-pods-api", "--timeout=2m"); r.code != 0 {
		f.kubectlResult(t, "-n", "kubelet-pods-api", "describe", "pods")
		f.kubectlResult(t, "-n", "kubelet-pods-api", "logs", "ds/kubelet-pods-api")
		require.Zero(t, r.code, "the DaemonSet's pod did not run: %s", r)
	}

	// What it needs and what it does not: the node's directory, root, and no token.
	volumes := f.kubectl(t, "-n", "kubelet-pods-api", "get", "pods", "-l", "app=kubelet-pods-api", "-o", "jsonpath={.items[0].spec.volumes[*].name}")
	assert.Equal(t, "pods-api", volumes, "no ServiceAccount token is mounted")

	logs := func() string {
		return f.kubectlResult(t, "-n", "kubelet-pods-api", "logs", "ds/kubelet-pods-api").stdout
	}
	seen := func(line string) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Contains(logs(), line) }, 2*time.Minute, time.Second, "%q in the DaemonSet's log:\n%s", line, logs())
	}
	seen("ADD    minikube kube-system/kube-apiserver-minikube 1/1 Running ")
	seen("Watching minikube's pods through its kubelet's Pods API socket, /var/lib/kubelet/pods-api/pods-api.sock (WatchPods), until Ctrl-C.\n")

	// A change on the node: a pod that runs the client's --help, and ends.
	f.kubectl(t, "-n", "kubelet-pods-api", "run", "pods-api-change", "--image="+podsAPIImage, "--image-pull-policy=Never", "--restart=Never", "--", "--help")
	seen("ADD    minikube kubelet-pods-api/pods-api-change ")
	seen("UPDATE minikube kubelet-pods-api/pods-api-change ")
	seen(" → Completed")
	f.kubectl(t, "-n", "kubelet-pods-api", "delete", "pod", "pods-api-change", "--wait", "--timeout=2m")
	seen("REMOVE minikube kubelet-pods-api/pods-api-change\n")
	assert.NotContains(t, logs(), "error:", "one stream, never broken, and no poll")
}
