// Package labtest gives a test package one real minikube cluster in a lab, started on first use
// and deleted when the package's tests end: `minikube start --driver=docker
// --container-runtime=containerd --kubernetes-version=<go.mod's>`, as a reader types it, on the
// lab's Docker engine. Without root or the lab's components a test skips saying why (fails under
// CI=true, which promises the tier). Main checks that the stopped lab left nothing on this machine.
//
// Its labs run their commands as root; lab.Options.Attendee = Attendee(root) runs a lab's as a
// workshop attendee, a normal user in the docker group (the rehearsal's does).
package labtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// Tier is the name tests use for the lab.
const Tier = "lab (real minikube on a real Docker engine)"

// Root is the repository's root: the directory of go.mod, above the working directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// KubernetesVersion is the version go.mod pins (the require line of k8s.io/kubernetes).
func KubernetesVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			return r.Mod.Version, nil
		}
	}
	return "", errors.New("go.mod requires no k8s.io/kubernetes")
}

// Options locates the lab's parts in a repository.
func Options(root string) lab.Options {
	return lab.Options{Components: filepath.Join(root, ".bin", "node"), Minikube: filepath.Join(root, ".bin", "minikube")}
}

// Attendee is the attendee of a lab in the repository root: it writes the checkout (and Go's
// caches) as their owner would, as an attendee writes their clone.
func Attendee(root string) *lab.Attendee { return &lab.Attendee{Owns: []string{root}} }

// Requirements says what this machine lacks to run the lab's tier (nil: nothing).
func Requirements() error {
	root, err := Root()
	if err != nil {
		return err
	}
	o := Options(root)
	return lab.Requirements(o.Components, o.Minikube)
}

// StartArgs are the arguments of the `minikube start` a reader types for this repository: --force
// too, since minikube v1.38.1 does not know v1.37.2 and, offline, only forced goes on without
// GitHub's answer (INSTRUCTOR.md).
func StartArgs(version string) []string {
	return []string{"start", "--driver=docker", "--container-runtime=containerd", "--kubernetes-version=" + version, "--force"}
}

// Cluster is a lab with a minikube cluster running in it.
type Cluster struct {
	*lab.Lab
	// KubernetesVersion is the cluster's version.
	KubernetesVersion string
	// Started is how long `minikube start` took; Ready when the cluster was Ready.
	Started, Ready time.Duration
}

// Start starts a lab and a minikube cluster in it, and waits until the Node and every pod of
// kube-system are Ready.
func Start(ctx context.Context) (*Cluster, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	version, err := KubernetesVersion(root)
	if err != nil {
		return nil, err
	}
	opts := Options(root)
	opts.Log = os.Stderr
	l, err := lab.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Lab: l, KubernetesVersion: version}
	begin := time.Now()
	out, err := c.Output(ctx, "minikube", StartArgs(version)...)
	if err != nil {
		return c, fmt.Errorf("minikube start: %w\n%s", err, out)
	}
	c.Started = time.Since(begin)
	if err := c.WaitReady(ctx, 3*time.Minute); err != nil {
		return c, err
	}
	c.Ready = time.Since(begin)
	fmt.Fprintf(os.Stderr, "labtest: minikube started in %s, the cluster Ready in %s\n", c.Started.Round(100*time.Millisecond), c.Ready.Round(100*time.Millisecond))
	return c, nil
}

// Output runs a program in the lab and returns what it printed (standard output and error).
func (c *Cluster) Output(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := c.Command(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// InNode runs a command in the node as root, as `minikube ssh -- sudo …` does, and returns its
// standard output.
func (c *Cluster) InNode(ctx context.Context, args ...string) ([]byte, error) {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	cmd := c.Command(ctx, "minikube", append([]string{"ssh", "--", "sudo"}, quoted...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	out = bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))
	if err != nil {
		return out, fmt.Errorf("minikube ssh -- sudo %s: %w: %s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out, nil
}

// Kubeconfig is the kubeconfig minikube wrote (KUBECONFIG in the lab).
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.Dir, "kubeconfig") }

// WaitReady waits until the Node and every pod of kube-system are Ready.
func (c *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		out, err := c.Output(ctx, "kubectl", "wait", "--for=condition=Ready", "node", "--all", "--timeout=10s")
		if err == nil {
			out, err = c.Output(ctx, "kubectl", "wait", "--for=condition=Ready", "pods", "--all", "--namespace=kube-system", "--timeout=10s")
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			pods, _ := c.Output(ctx, "kubectl", "get", "pods", "--all-namespaces")
			return fmt.Errorf("the cluster is not Ready after %s: %s\n%s", timeout, out, pods)
		}
		time.Sleep(time.Second)
	}
}

var (
	once    sync.Once
	shared  *Cluster
	failure error
	before  lab.Trace
)

// Shared returns the package's cluster, started on first use. Without root or the lab's parts
// the test skips with the reason (under CI=true it fails).
func Shared(t testing.TB) *Cluster {
	t.Helper()
	tier.Require(t, Tier, Requirements())
	once.Do(func() {
		before = lab.TakeTrace()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		shared, failure = Start(ctx)
	})
	if failure != nil {
		t.Fatalf("the lab's cluster did not start: %v", failure)
	}
	return shared
}

// Main runs a package's tests, then deletes the shared cluster and stops its lab, and fails the
// package if that left anything on this machine.
func Main(m *testing.M) int {
	code := m.Run()
	if shared == nil {
		return code
	}
	start := time.Now()
	if err := shared.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "labtest: stopping the lab:", err)
		code = 1
	}
	fmt.Fprintf(os.Stderr, "labtest: lab stopped in %s\n", time.Since(start).Round(100*time.Millisecond))
	if left := append(shared.Left(), lab.Leftovers(before, lab.TakeTrace())...); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "labtest: the lab left on this machine:\n  %s\n", strings.Join(left, "\n  "))
		code = 1
	}
	return code
}

// RealMinikube checks that binary is minikube's own build: the module k8s.io/minikube, checked
// against go.sum (its `mod` line has a hash), at the version chapters/machinery/lab/minikube/go.mod pins, and
// that `minikube version --short` says that version. It returns the version.
func RealMinikube(root, binary string) (string, error) {
	mod, err := os.ReadFile(filepath.Join(root, "chapters", "machinery", "lab", "minikube", "go.mod"))
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax("go.mod", mod, nil)
	if err != nil {
		return "", err
	}
	pinned := ""
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/minikube" {
			pinned = r.Mod.Version
		}
	}
	if pinned == "" {
		return "", errors.New("chapters/machinery/lab/minikube/go.mod requires no k8s.io/minikube")
	}
	info, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		return "", fmt.Errorf("go version -m %s: %w", binary, err)
	}
	if !strings.Contains(string(info), "\tpath\tk8s.io/minikube/cmd/minikube\n") ||
		!strings.Contains(string(info), "\tmod\tk8s.io/minikube\t"+pinned+"\th1:") {
		return "", fmt.Errorf("%s is not minikube's own build of k8s.io/minikube %s (go version -m says otherwise)", binary, pinned)
	}
	// minikube writes a log of each command into TMPDIR, and makes its home (~/.minikube, with
	// eight directories) at any command: both in a directory of its own, removed after.
	tmp, err := os.MkdirTemp("", "minikube-version-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	version := exec.Command(binary, "version", "--short")
	version.Env = append(os.Environ(), "TMPDIR="+tmp, "MINIKUBE_HOME="+filepath.Join(tmp, "home"))
	out, err := version.Output()
	if err != nil {
		return "", fmt.Errorf("%s version --short: %w", binary, err)
	}
	if v := strings.TrimSpace(string(out)); v != pinned {
		return "", fmt.Errorf("%s version --short says %s, not %s", binary, v, pinned)
	}
	return pinned, nil
}
