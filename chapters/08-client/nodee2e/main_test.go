// Package nodee2e proves chapter 08's client against a kubelet that kubeadm configured: the
// minikube-shaped node of chapter 09, booted once for the package. There the kubelet's serving
// certificate is the one it signs for itself at start (hostname only, no IP), its
// authentication and authorization are kubeadm's webhooks (TokenReview and SubjectAccessReview
// answered by the apiserver's real RBAC), and the apiserver reaches it with kubeadm's own
// kubelet-client identity — none of which the in-process kubelets of the e2e package are.
//
// The client is the chapter's program, built once and run as a reader runs it. The node's
// address, 192.168.49.2, is reachable only inside the network namespace of the node's launcher
// (as from a machine on minikube's Docker network; from this machine's own network it is not,
// as with minikube's Docker driver on macOS), so the runs that talk to the kubelet directly are
// `nsenter --net=/proc/<launcher>/ns/net -- 08-client …`; the apiserver's relay,
// https://127.0.0.1:<port>, answers in both.
package nodee2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-node/node"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/tier"
)

var (
	repoRoot   = mustAbs("../../..")
	components = filepath.Join(repoRoot, ".bin", "node")
	rootfs     = filepath.Join(components, "rootfs")
	rbacDir    = filepath.Join(repoRoot, "examples", "rbac")
)

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return abs
}

// fixture is the package's node and what the tests need around it.
type fixture struct {
	node *node.Node
	// dir holds the node's run directory, the client's binary and the files below.
	dir string
	// kubeconfig is kubeadm's admin kubeconfig, its server the relay https://127.0.0.1:<port>.
	kubeconfig string
	// program is the chapter's client (go build ./chapters/08-client).
	program string
	// kubeletCert is the kubelet's own serving certificate, fetched through the node as
	// `minikube ssh -- sudo cat /var/lib/kubelet/pki/kubelet.crt` does.
	kubeletCert string
	// noSecrets is an empty directory given as the pod's ServiceAccount directory, so that no
	// run reads this machine's /var/run/secrets.
	noSecrets string
}

var (
	sharedOnce sync.Once
	shared     *fixture
	sharedErr  error
)

func TestMain(m *testing.M) {
	// The node's launcher and its first process are this test binary run again with one of
	// the node package's hidden subcommands.
	if len(os.Args) > 1 {
		for _, c := range node.Commands() {
			if c.Name() == os.Args[1] {
				if err := c.RunE(c, os.Args[2:]); err != nil {
					fmt.Fprintln(os.Stderr, "error:", err)
					os.Exit(1)
				}
				os.Exit(0)
			}
		}
	}
	code := m.Run()
	if shared != nil {
		if shared.node != nil {
			start := time.Now()
			if err := shared.node.Stop(context.Background()); err != nil {
				fmt.Fprintln(os.Stderr, "stop the node:", err)
				code = 1
			}
			fmt.Fprintf(os.Stderr, "nodee2e: node stopped in %s\n", time.Since(start).Round(100*time.Millisecond))
			if left := leftovers(shared.node.State.Dir); left != "" {
				fmt.Fprintln(os.Stderr, "the node left:", left)
				code = 1
			}
		}
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// leftovers says what a stopped node left running or mounted (the node package's own tests
// check the rest: cgroups, this machine's files and network).
func leftovers(dir string) string {
	var left []string
	st, err := node.ReadState(dir)
	switch {
	case err != nil:
		left = append(left, "no state: "+err.Error())
	case st.Phase != node.PhaseStopped:
		left = append(left, "a node in phase "+string(st.Phase))
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, dir) {
			left = append(left, "mount "+line)
		}
	}
	return strings.Join(left, "; ")
}

// nodeFixture returns the package's node, booted and bootstrapped by kubeadm on first use, with
// the client built meanwhile. Without root or the node's components the test skips with the
// reason (fails under CI=true, which promises the node tier).
func nodeFixture(t *testing.T) *fixture {
	t.Helper()
	tier.Require(t, "node", node.Requirements(node.Options{Rootfs: rootfs, Components: components}))
	sharedOnce.Do(func() { shared, sharedErr = boot() })
	require.NoError(t, sharedErr, "the node did not start")
	return shared
}

func boot() (*fixture, error) {
	dir, err := os.MkdirTemp("", "nodee2e-")
	if err != nil {
		return nil, err
	}
	f := &fixture{dir: dir, program: filepath.Join(dir, "08-client"), noSecrets: filepath.Join(dir, "no-secrets")}
	if err := os.Mkdir(f.noSecrets, 0o700); err != nil {
		return f, err
	}
	// The client builds while the node boots: the boot is mostly waiting for containers.
	var build sync.WaitGroup
	var buildErr error
	var buildTime time.Duration
	build.Go(func() {
		start := time.Now()
		out, err := exec.Command("go", "build", "-o", f.program, "github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-client").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./chapters/08-client: %w\n%s", err, out)
		}
		buildTime = time.Since(start)
	})
	start := time.Now()
	ctx := context.Background()
	f.node, err = node.Start(ctx, node.Options{Dir: filepath.Join(dir, "node"), Rootfs: rootfs, Components: components,
		KubernetesVersion: "v1.37.2", StopWithParent: true, Log: os.Stderr})
	if err == nil {
		err = f.node.Bootstrap(ctx)
	}
	build.Wait()
	fmt.Fprintf(os.Stderr, "nodee2e: node booted and bootstrapped in %s; client built in %s\n",
		time.Since(start).Round(100*time.Millisecond), buildTime.Round(100*time.Millisecond))
	if err = errors.Join(err, buildErr); err != nil {
		return f, err
	}
	admin, err := f.node.AdminKubeconfig(ctx)
	if err != nil {
		return f, err
	}
	f.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*admin, f.kubeconfig); err != nil {
		return f, err
	}
	cert, err := f.node.Output(ctx, "cat", "/var/lib/kubelet/pki/kubelet.crt")
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

func runProgram(t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
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

// client runs the chapter's program on this machine's network, where only the relay to the
// apiserver answers.
func (f *fixture) client(t *testing.T, args ...string) result {
	t.Helper()
	return runProgram(t, f.program, f.clientArgs(args)...)
}

// clientBeside runs the chapter's program next to the node: in its launcher's network
// namespace, where 192.168.49.2 is reachable (and the relay answers on 127.0.0.1 too).
func (f *fixture) clientBeside(t *testing.T, args ...string) result {
	t.Helper()
	netns := "--net=/proc/" + strconv.Itoa(f.node.State.LauncherPID) + "/ns/net"
	return runProgram(t, "nsenter", append([]string{netns, "--", f.program}, f.clientArgs(args)...)...)
}

// kubectl runs the node's own kubectl (v1.37.2) with the admin kubeconfig, and fails the test
// if it fails.
func (f *fixture) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	r := f.kubectlResult(t, args...)
	require.Zero(t, r.code, "kubectl %s: %s", strings.Join(args, " "), r)
	return r.stdout
}

func (f *fixture) kubectlResult(t *testing.T, args ...string) result {
	t.Helper()
	return runProgram(t, filepath.Join(components, "bin", "kubectl"), append([]string{"--kubeconfig", f.kubeconfig}, args...)...)
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
	}, 30*time.Second, 200*time.Millisecond, "can-i get nodes/%s %s: want %s", subresource, as, want)
}

// inNode runs a command in the node, as `minikube ssh -- sudo …` would.
func (f *fixture) inNode(t *testing.T, args ...string) string {
	t.Helper()
	out, err := f.node.Output(context.Background(), args...)
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
		return nil, fmt.Errorf("08-client: %s", r)
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
