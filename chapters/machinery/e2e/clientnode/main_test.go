// Package clientnode proves the production client (examples/kubelet-pods, on chapter 11's
// package) against a kubelet that kubeadm configured: a real minikube node, started once for the package in the lab (chapters/machinery/lab: real minikube on a real
// Docker engine). Chapter 12's boot story is read from the same node, before any test restarts
// its kubelet (bootstory_test.go): one cluster for both, not one each. There the kubelet's serving certificate is the one it signs for itself at start
// (hostname only, no IP), its authentication and authorization are kubeadm's webhooks
// (TokenReview and SubjectAccessReview answered by the apiserver's real RBAC), and the apiserver
// reaches it with kubeadm's own kubelet-client identity — none of which the in-process kubelets
// of the e2e package are.
//
// The client is that program, built once and run as a reader runs it, in the lab: on
// the Docker engine's network, as on a Linux laptop with minikube's docker driver, where the
// node's address (192.168.49.2, minikube's choice) and the apiserver answer.
package clientnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/12-node/bootstory"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/labtest"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

var (
	repoRoot = repo.Root()
	rbacDir  = filepath.Join(repoRoot, "examples", "rbac")
)

// fixture is the package's cluster and what the tests need around it.
type fixture struct {
	cluster *labtest.Cluster
	// dir holds the client's binary and the files below.
	dir string
	// kubeconfig is the kubeconfig minikube wrote.
	kubeconfig string
	// program is the production client (go build ./examples/kubelet-pods).
	program string
	// kubeletCert is the kubelet's own serving certificate, fetched through the node as
	// `minikube ssh -- sudo cat /var/lib/kubelet/pki/kubelet.crt` does.
	kubeletCert string
	// noSecrets is an empty directory given as the pod's ServiceAccount directory, so that no
	// run reads this machine's /var/run/secrets.
	noSecrets string
	// bootProfile and bootStory are chapter 12's account of the node's start, read before any
	// test restarts its kubelet (bootstory_test.go); bootErr is why they could not be.
	bootProfile bootstory.Profile
	bootStory   *bootstory.Story
	bootErr     error
}

var (
	sharedOnce sync.Once
	shared     *fixture
	sharedErr  error
)

func TestMain(m *testing.M) {
	code := labtest.Main(m)
	if shared != nil {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// nodeFixture returns the package's cluster, started on first use, with the client built. Without
// root or the lab's components the test skips with the reason (fails under CI=true, which
// promises the tier).
func nodeFixture(t *testing.T) *fixture {
	t.Helper()
	cluster := labtest.Shared(t)
	sharedOnce.Do(func() { shared, sharedErr = prepare(cluster) })
	require.NoError(t, sharedErr, "the fixture did not start")
	return shared
}

func prepare(cluster *labtest.Cluster) (*fixture, error) {
	dir, err := os.MkdirTemp("", "nodee2e-")
	if err != nil {
		return nil, err
	}
	f := &fixture{cluster: cluster, dir: dir, program: filepath.Join(dir, "kubelet-pods"), noSecrets: filepath.Join(dir, "no-secrets"),
		kubeconfig: cluster.Kubeconfig()}
	if err := os.Mkdir(f.noSecrets, 0o700); err != nil {
		return f, err
	}
	if out, err := exec.Command("go", "build", "-o", f.program, "github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods").CombinedOutput(); err != nil {
		return f, fmt.Errorf("go build ./examples/kubelet-pods: %w\n%s", err, out)
	}
	ctx := context.Background()
	readBootStory(ctx, f)
	if ip, err := cluster.Output(ctx, "minikube", "ip"); err != nil || strings.TrimSpace(string(ip)) != nodeIP {
		return f, fmt.Errorf("minikube ip: %q, %v; these tests expect %s, minikube's first choice", ip, err, nodeIP)
	}
	cert, err := cluster.InNode(ctx, "cat", "/var/lib/kubelet/pki/kubelet.crt")
	if err != nil {
		return f, err
	}
	f.kubeletCert = filepath.Join(dir, "kubelet.crt")
	return f, os.WriteFile(f.kubeletCert, cert, 0o644)
}

// result is what a program printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runProgram runs a program in the lab, with the lab's environment but a HOME of its own.
func (f *fixture) runProgram(t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := f.cluster.Command(ctx, name, args...)
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		require.NoError(t, err, "%s %s", name, strings.Join(args, " "))
	}
	t.Logf("$ %s %s\n%s%s", filepath.Base(name), strings.Join(args, " "), r.stdout, r.stderr)
	return r
}

// clientArgs are a run's arguments with the kubeconfig and the empty ServiceAccount directory.
func (f *fixture) clientArgs(args []string) []string {
	return append(append([]string(nil), args...), "--kubeconfig", f.kubeconfig, "--service-account-dir", f.noSecrets)
}

// client runs the program as a reader runs it on a Linux laptop with minikube's
// docker driver: on the lab's network, where the node's address and the apiserver answer.
func (f *fixture) client(t *testing.T, args ...string) result {
	t.Helper()
	return f.runProgram(t, f.program, f.clientArgs(args)...)
}

// kubectl runs kubectl (v1.37.2, from minikube's cache) with minikube's kubeconfig, and fails
// the test if it fails.
func (f *fixture) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	r := f.kubectlResult(t, args...)
	require.Zero(t, r.code, "kubectl %s: %s", strings.Join(args, " "), r)
	return r.stdout
}

func (f *fixture) kubectlResult(t *testing.T, args ...string) result {
	t.Helper()
	return f.runProgram(t, "kubectl", append([]string{"--kubeconfig", f.kubeconfig}, args...)...)
}

// applyRBAC is the README's `kubectl apply -f examples/rbac/`; it returns when the apiserver's
// authorizer lets the ServiceAccount get nodes/pods (a fresh binding takes a moment to reach it,
// and a kubelet asked meanwhile would remember its denial for 30 s).
func (f *fixture) applyRBAC(t *testing.T) {
	t.Helper()
	f.kubectl(t, "apply", "-f", rbacDir+"/")
	f.canI(t, "pods", "--as=system:serviceaccount:kubelet-reader:kubelet-reader", "yes")
}

// canI waits until `kubectl auth can-i get nodes/minikube --subresource=… --as=…` answers want:
// what the kubelet's SubjectAccessReview will be told.
func (f *fixture) canI(t *testing.T, subresource, as, want string) {
	t.Helper()
	var got result
	require.Eventually(t, func() bool {
		got = f.kubectlResult(t, "auth", "can-i", "get", "nodes/"+nodeName, "--subresource="+subresource, as)
		return strings.TrimSpace(got.stdout) == want
	}, 30*time.Second, 200*time.Millisecond, "can-i get nodes/%s %s: want %s; the last answer: %s", subresource, as, want, &got)
}

// inNode runs a command in the node, as `minikube ssh -- sudo …` would.
func (f *fixture) inNode(t *testing.T, args ...string) string {
	t.Helper()
	out, err := f.cluster.InNode(context.Background(), args...)
	require.NoError(t, err)
	return string(out)
}

// pods is what the kubelet itself reports (its /pods, through the apiserver's proxy): each pod as
// namespace/name, and whether all its containers are ready. It reports, instead of failing the
// test, when the client cannot ask: a restarting kubelet is asked again.
func (f *fixture) pods(t *testing.T) (map[string]bool, error) {
	t.Helper()
	r := f.client(t, "--node", nodeName, "--via=apiserver", "-o", "wide")
	if r.code != 0 {
		return nil, fmt.Errorf("kubelet-pods: %s", r)
	}
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if header := strings.Fields(rows[0]); len(header) < 4 || !slices.Equal(header[:4], []string{"NODE", "NAMESPACE", "NAME", "READY"}) {
		return nil, fmt.Errorf("not the table's header: %q", rows[0])
	}
	pods := map[string]bool{}
	for _, line := range rows[1:] {
		fields := strings.Fields(line)
		if len(fields) < 4 {
			return nil, fmt.Errorf("not a row of the table: %q", line)
		}
		ready, total, ok := strings.Cut(fields[3], "/")
		pods[fields[1]+"/"+fields[2]] = ok && ready == total
	}
	return pods, nil
}
