package node

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/tier"
)

// The node tier: a real node, booted once for the package (about half a minute), torn down at
// the end with a check that it left nothing behind.

var (
	components = mustAbs("../../../.bin/node")
	rootfs     = filepath.Join(components, "rootfs")
	sharedOnce sync.Once
	shared     *Node
	sharedErr  error
)

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return abs
}

func TestMain(m *testing.M) {
	// The launcher and the node's first process are this test binary again.
	if len(os.Args) > 1 && (os.Args[1] == launcherCommand || os.Args[1] == initCommand) {
		cmd := Commands()
		for _, c := range cmd {
			if strings.HasPrefix(c.Use, os.Args[1]+" ") {
				if err := c.RunE(c, os.Args[2:]); err != nil {
					fmt.Fprintln(os.Stderr, "error:", err)
					os.Exit(1)
				}
				os.Exit(0)
			}
		}
	}
	if len(os.Args) > 1 && os.Args[1] == parentCommand {
		os.Exit(runParent(os.Args[2]))
	}
	before := hostSnapshot()
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "stop the shared node:", err)
			code = 1
		}
		if left := leftovers(shared.State.Dir); left != "" {
			fmt.Fprintln(os.Stderr, "the shared node left:", left)
			code = 1
		}
		if after := hostSnapshot(); after != before {
			fmt.Fprintf(os.Stderr, "the machine changed while a node ran:\nbefore:\n%s\nafter:\n%s\n", before, after)
			code = 1
		}
		_ = os.RemoveAll(shared.State.Dir)
	}
	os.Exit(code)
}

func testOptions(t *testing.T) Options {
	return Options{Dir: t.TempDir(), Rootfs: rootfs, Components: components, KubernetesVersion: "v1.37.2"}
}

// node returns the package's node, booted and bootstrapped on first use.
func node(t *testing.T) *Node {
	t.Helper()
	tier.Require(t, "node", Requirements(Options{Rootfs: rootfs, Components: components}))
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "node-test-")
		if err != nil {
			sharedErr = err
			return
		}
		opts := Options{Dir: dir, Rootfs: rootfs, Components: components, KubernetesVersion: "v1.37.2", StopWithParent: true, Log: os.Stderr}
		if shared, sharedErr = Start(context.Background(), opts); sharedErr == nil {
			sharedErr = shared.Bootstrap(context.Background())
		}
	})
	require.NoError(t, sharedErr, "the shared node did not start")
	return shared
}

// The bootstrap story, from the node's evidence, in the order the reading notes tell it: the
// kubelet runs before any apiserver answers, starts the control plane's containers, registers
// with the apiserver it started, and mirrors its static pods.
func TestBootstrapOrder(t *testing.T) {
	n := node(t)
	story, err := n.TellStory(context.Background())
	require.NoError(t, err)
	at := map[Step]time.Time{}
	for _, step := range []Step{UnitWithoutConfig, ManifestsWritten, KubeletRuns, NoAPIServer, ContainersCreated, NodeRegistered, MirrorPods, FinalRestart} {
		e, ok := story.Find(step)
		require.True(t, ok, "the evidence shows no step %d:\n%+v", step, story.Events)
		at[step] = e.At
	}
	before := func(a, b Step, why string) {
		assert.True(t, at[a].Before(at[b]), "%s: step %d at %s, step %d at %s", why, a, at[a].Format(time.StampMicro), b, at[b].Format(time.StampMicro))
	}
	before(UnitWithoutConfig, KubeletRuns, "the unit runs before kubeadm configures it")
	before(ManifestsWritten, ContainersCreated, "the containers come from the manifests")
	before(KubeletRuns, ContainersCreated, "the kubelet creates the containers")
	before(NoAPIServer, NodeRegistered, "no apiserver answers before the kubelet has started it")
	before(ContainersCreated, NodeRegistered, "the kubelet registers with the apiserver it started")
	// The apiserver's timestamps have whole seconds.
	assert.False(t, at[MirrorPods].Before(at[NodeRegistered].Truncate(time.Second)), "a mirror pod needs its Node")
	before(KubeletRuns, FinalRestart, "kubelet-finalize comes last")
}

// The control plane runs in real containers, as crictl in the node shows them.
func TestControlPlaneInContainers(t *testing.T) {
	n := node(t)
	out, err := n.Output(context.Background(), "crictl", "ps", "--state", "Running", "--output", "table")
	require.NoError(t, err)
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		assert.Contains(t, string(out), c)
	}
	// runc runs them: each container's process has its own PID namespace.
	pid, err := n.Output(context.Background(), "pidof", "kube-apiserver")
	require.NoError(t, err)
	ns, err := n.Output(context.Background(), "readlink", "/proc/"+strings.TrimSpace(string(pid))+"/ns/pid", "/proc/1/ns/pid")
	require.NoError(t, err)
	lines := strings.Fields(string(ns))
	require.Len(t, lines, 2)
	assert.NotEqual(t, lines[0], lines[1])
}

// kubeadm leaves the kubelet's serving certificate self-signed, for the hostname only: the
// reason a verifying client cannot reach it by IP (chapter 08, the workshop's exercise 5).
func TestKubeletServingCertificate(t *testing.T) {
	n := node(t)
	data, err := n.Output(context.Background(), "cat", "/var/lib/kubelet/pki/kubelet.crt")
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, []string{"minikube"}, cert.DNSNames)
	assert.Empty(t, cert.IPAddresses)
	// Signed by a CA the kubelet made for itself on the spot (client-go's GenerateSelfSignedCertKey),
	// not by the cluster's CA.
	assert.Regexp(t, `^CN=minikube-ca@\d+$`, cert.Issuer.String())
	clusterCA, err := n.Output(context.Background(), "openssl", "x509", "-noout", "-subject", "-in", "/var/lib/minikube/certs/ca.crt")
	require.NoError(t, err)
	assert.Contains(t, string(clusterCA), "CN = kubernetes")
}

// The relay publishes the apiserver on this machine's loopback, and the kubeconfig made for it
// verifies the apiserver's certificate there (minikube's certSANs name 127.0.0.1).
func TestRelay(t *testing.T) {
	n := node(t)
	admin, err := n.AdminKubeconfig(context.Background())
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*admin, kubeconfig))
	out, err := exec.Command(filepath.Join(components, "bin", "kubectl"), "--kubeconfig", kubeconfig, "get", "--raw", "/readyz").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "ok", strings.TrimSpace(string(out)))
	assert.Equal(t, "minikube", admin.CurrentContext)
}

// hostSnapshot records what a node could leave on this machine outside its run directory: the
// places a kubelet, kubeadm or containerd would write to on a real machine, and this network
// namespace's links and routes.
func hostSnapshot() string {
	var b strings.Builder
	for _, p := range []string{"/var/lib/kubelet", "/etc/kubernetes", "/var/lib/containerd", "/run/containerd",
		"/opt/containerd", "/etc/cni", "/opt/cni", "/var/lib/minikube", "/var/log/pods", "/var/log/containers"} {
		_, err := os.Lstat(p)
		fmt.Fprintf(&b, "%s exists=%t\n", p, err == nil)
	}
	for _, args := range [][]string{{"-o", "link"}, {"route"}} {
		out, _ := exec.Command("ip", args...).Output()
		b.Write(out)
	}
	// The netfilter tables this network namespace has (kube-proxy's and the CNI's rules live in
	// the node's own).
	for _, f := range []string{"/proc/net/ip_tables_names", "/proc/net/ip6_tables_names"} {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "%s: %q\n", f, data)
	}
	return b.String()
}

// leftovers says what a stopped node left outside its run directory: processes in its
// cgroups, the cgroups themselves, mounts of its directory, processes in its namespaces.
func leftovers(dir string) string {
	var left []string
	cfg, err := readLaunch(dir)
	if err != nil {
		return "no launch record: " + err.Error()
	}
	for _, h := range cfg.Cgroups {
		if _, err := os.Stat(h.Dir); err == nil {
			left = append(left, "cgroup "+h.Dir)
		}
	}
	if pids := cgroupProcesses(cfg.Cgroups); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v", pids))
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, dir) {
			left = append(left, "mount "+line)
		}
	}
	st, err := ReadState(dir)
	if err == nil {
		// Anything still in one of the node's namespaces (nsenter'd there and left behind).
		holders, _ := filepath.Glob("/proc/[0-9]*/ns/*")
		for _, h := range holders {
			if link, err := os.Readlink(h); err == nil && slices.Contains(st.Namespaces, link) {
				left = append(left, h+" is "+link)
			}
		}
		for _, pid := range []int{st.LauncherPID, st.NodePID} {
			if alive(pid, "") && syscall.Kill(pid, 0) == nil && isLauncherOrNode(pid, dir) {
				left = append(left, fmt.Sprintf("process %d", pid))
			}
		}
	}
	return strings.Join(left, "; ")
}

func isLauncherOrNode(pid int, dir string) bool {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.Contains(string(data), dir)
}

// parentCommand makes this test binary a program that starts a node (boot only) and waits to
// be killed: the crash the hygiene test causes.
const parentCommand = "__node-test-parent"

func runParent(dir string) int {
	n, err := Start(context.Background(), Options{Dir: dir, Rootfs: rootfs, Components: components, KubernetesVersion: "v1.37.2", StopWithParent: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("node running", n.State.NodePID)
	select {}
}

// A crash of the program that started a node (SIGKILL: no deferred Stop runs) leaves nothing:
// the launcher gets SIGTERM from the kernel (its parent-death signal), stops the node, and
// removes its cgroups.
func TestNothingLeftAfterACrash(t *testing.T) {
	tier.Require(t, "node", Requirements(Options{Rootfs: rootfs, Components: components}))
	dir := t.TempDir()
	before := hostSnapshot()
	parent := exec.Command(os.Args[0], parentCommand, dir)
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	parent.Stderr = os.Stderr
	require.NoError(t, parent.Start())
	line, _ := bufio.NewReader(out).ReadString('\n')
	require.Contains(t, line, "node running", "the node did not start")
	st, err := ReadState(dir)
	require.NoError(t, err)
	require.True(t, st.Running())
	// Someone entered the node's mount and network namespaces, not its PID namespace: that
	// process would outlive the node and keep its mounts.
	straggler := exec.Command("nsenter", "-t", fmt.Sprint(st.NodePID), "-m", "-n", "sleep", "300")
	require.NoError(t, straggler.Start())
	defer func() { _ = straggler.Process.Kill(); _ = straggler.Wait() }()

	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()
	require.Eventually(t, func() bool {
		st, err := ReadState(dir)
		return err == nil && st.Phase == PhaseStopped && !alive(st.LauncherPID, "")
	}, time.Minute, 50*time.Millisecond, "the launcher stops the node when its parent dies")
	assert.Empty(t, leftovers(dir))
	assert.Equal(t, before, hostSnapshot())
}
