// Package rehearsal rehearses every workshop exercise on the embedded mini-cluster: the checker
// must say FAIL, with what is missing, before the exercise's steps, and PASS after them. Files
// written into the kubelet's static pod directory stand in for `minikube cp`; the kubelet's log
// file stands in for `journalctl -u kubelet`.
package rehearsal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/07-minicluster/minicluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/tier"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/workshop/checks"
)

const root = "../../.."

var (
	noNetns error
	logFile string
)

func TestMain(m *testing.M) {
	if ran, code, err := netns.RunInside(); ran {
		os.Exit(code)
	} else if err != nil {
		noNetns = fmt.Errorf("no private network namespace could be made (%w)", err)
	}
	var closeLog func()
	var err error
	logFile, closeLog, err = kubeletlog.ToFile("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	closeLog()
	os.Exit(code)
}

// workshop is the rehearsal's cluster: one node, as minikube, with minikube's control plane as
// static pods.
type workshop struct {
	t       *testing.T
	cluster *minicluster.Cluster
	static  string
	env     checks.Env
}

func (w *workshop) check(n int) checks.Result {
	ex, err := checks.Find(n)
	require.NoError(w.t, err)
	r, err := ex.Check(context.Background(), w.env)
	require.NoError(w.t, err, "exercise %d could not be checked", n)
	return r
}

// copyFile writes src into dir atomically, as `minikube cp` lands a file.
func copyFile(t *testing.T, src, dir, name string, edit func(string) string) {
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	content := string(data)
	if edit != nil {
		content = edit(content)
	}
	tmp := filepath.Join(dir, ".tmp-"+name)
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
}

func writeAnswer(t *testing.T, dir, name string, v any) {
	var data []byte
	var err error
	if s, ok := v.(string); ok {
		data = []byte(s)
	} else if data, err = yaml.Marshal(v); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
}

func TestRehearseWorkshop(t *testing.T) {
	tier.Require(t, "rehearsal", noNetns)
	ip, _ := netns.Inside()
	static := t.TempDir()
	for _, f := range []string{"etcd.yaml", "kube-apiserver.yaml", "kube-controller-manager.yaml", "kube-scheduler.yaml"} {
		copyFile(t, filepath.Join(root, "examples/static-pods", f), static, f, nil)
	}
	ctx := context.Background()
	c, err := minicluster.Start(ctx, minicluster.Options{NodeIP: ip, StaticPodPath: static, FileCheckFrequency: time.Second})
	require.NoError(t, err)
	defer c.Stop()
	require.NoError(t, c.WaitForNodesReady(ctx))
	_, err = c.WaitForMirrorPods(ctx, 4)
	require.NoError(t, err)
	admin, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	require.NoError(t, err)
	answers := t.TempDir()
	absRoot, err := filepath.Abs(root)
	require.NoError(t, err)
	w := &workshop{t: t, cluster: c, static: static, env: checks.Env{Client: c.Client, Config: admin, Answers: answers, Root: absRoot}}
	node := c.Nodes[0].Name

	steps := []struct {
		n          int
		wantBefore string // a piece of what the checker says is missing before the steps
		steps      func(t *testing.T)
	}{
		{1, "your answers in", func(t *testing.T) {
			// The reader's way: the manifests on the node name the mirror pods.
			listing, err := staticpods.List(static, types.NodeName(node))
			require.NoError(t, err)
			var mirrors []string
			for _, p := range listing.Pods {
				mirrors = append(mirrors, p.Namespace+"/"+p.Name)
			}
			writeAnswer(t, answers, "01-static-pods.yaml", map[string]any{"staticPodPath": static, "mirrorPods": mirrors})
		}},
		{2, "the mirror pod default/workshop-web-" + node, func(t *testing.T) {
			copyFile(t, filepath.Join(root, "examples/workshop/02-add-static-pod/workshop-web.yaml"), static, "workshop-web.yaml", nil)
			waitMirror(t, c, "workshop-web-"+node, "")
			copyFile(t, filepath.Join(root, "examples/workshop/02-add-static-pod/workshop-web.yaml"), static, "workshop-web.yaml", func(s string) string {
				return strings.Replace(s, "app: workshop-web", "app: workshop-web\n    edited: \"true\"", 1)
			})
			waitMirror(t, c, "workshop-web-"+node, "true")
		}},
		{3, "the kubelet's reason", func(t *testing.T) {
			copyFile(t, filepath.Join(root, "examples/workshop/03-broken-manifest/workshop-broken.yaml"), static, "workshop-broken.yaml", nil)
			writeAnswer(t, answers, "03-reason.txt", kubeletReason(t, "workshop-broken.yaml"))
		}},
		{4, "your answers in", func(t *testing.T) {
			require.NoError(t, c.Apply(context.Background(), filepath.Join(root, "examples/rbac/00-namespace.yaml"), filepath.Join(root, "examples/rbac/01-serviceaccount.yaml")))
			token := saToken(t, c, "kubelet-reader", "kubelet-reader")
			before := kubeletStatus(t, admin, token, node)
			require.NoError(t, c.Apply(context.Background(), filepath.Join(root, "examples/rbac/02-clusterrole.yaml"), filepath.Join(root, "examples/rbac/03-clusterrolebinding.yaml")))
			var after int
			require.Eventually(t, func() bool { after = kubeletStatus(t, admin, token, node); return after == 200 }, 30*time.Second, 200*time.Millisecond)
			writeAnswer(t, answers, "04-token-and-rbac.yaml", map[string]any{"beforeRBAC": before, "afterRBAC": after, "narrowest": "nodes/pods"})
		}},
		{5, "your answers in", func(t *testing.T) {
			n, err := c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
			require.NoError(t, err)
			var address string
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					address = a.Address
				}
			}
			writeAnswer(t, answers, "05-address-and-port.yaml", map[string]any{
				"address": address, "port": n.Status.DaemonEndpoints.KubeletEndpoint.Port, "fix": "kubelet-ca-file"})
		}},
		{6, "your answers in", func(t *testing.T) {
			path := "/api/v1/nodes/" + node + "/proxy/pods"
			raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(context.Background()) // kubectl get --raw
			require.NoError(t, err)
			var proxied corev1.PodList
			require.NoError(t, json.Unmarshal(raw, &proxied))
			direct, err := kubeletclient.New(admin, kubeletclient.Options{Via: kubeletclient.ViaKubelet})
			require.NoError(t, err)
			r := direct.Pods(context.Background(), node)
			require.NoError(t, r.Err)
			writeAnswer(t, answers, "06-node-proxy.yaml", map[string]any{"path": path, "pods": len(proxied.Items), "same": sameNames(proxied.Items, r.Pods)})
		}},
		{7, "the DaemonSet kubelet-reader/kubelet-reader", func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(root, "examples/rbac/*.yaml"))
			require.NoError(t, err)
			slices.Sort(files)
			require.NoError(t, c.Apply(context.Background(), files...))
		}},
		{8, "the exercise's test to pass", solutionOverlay},
		{9, "the exercise's test to pass", solutionOverlay},
	}
	require.Len(t, steps, len(checks.Exercises), "every exercise is rehearsed")
	for _, s := range steps {
		t.Run(fmt.Sprintf("exercise %d", s.n), func(t *testing.T) {
			w.t = t
			before := w.check(s.n)
			require.False(t, before.Passed(), "exercise %d passes before its steps", s.n)
			assert.Contains(t, strings.Join(before.Missing, "\n"), s.wantBefore)
			s.steps(t)
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				r := w.check(s.n)
				assert.True(c, r.Passed(), "exercise %d still misses: %v", s.n, r.Missing)
			}, 60*time.Second, 500*time.Millisecond)
			t.Logf("exercise %d: FAIL before (%s), PASS after", s.n, before.Missing[0])
		})
	}
}

// solutionOverlay makes the checker's `go test` build the reference solutions instead of the
// exercise files, as an attendee's finished code.
func solutionOverlay(t *testing.T) {
	w, err := filepath.Abs(filepath.Join(root, "examples/workshop"))
	require.NoError(t, err)
	overlay := map[string]map[string]string{"Replace": {
		w + "/08-toy-remove/remove.go":           w + "/solutions/08-toy-remove/remove.go",
		w + "/09-toy-namespace-filter/filter.go": w + "/solutions/09-toy-namespace-filter/filter.go",
	}}
	data, err := json.Marshal(overlay)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "overlay.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	t.Setenv("GOFLAGS", "-overlay="+path)
}

func waitMirror(t *testing.T, c *minicluster.Cluster, name, edited string) {
	require.Eventually(t, func() bool {
		p, err := c.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && p.Labels["edited"] == edited
	}, time.Minute, 100*time.Millisecond, "mirror pod %s (edited=%q)", name, edited)
}

var reasonInLog = regexp.MustCompile(`"Could not process manifest file" err="((?:[^"\\]|\\.)*)" path="[^"]*%s"`)

// kubeletReason finds in the kubelet's log why it refused a manifest, as journalctl would show.
func kubeletReason(t *testing.T, file string) string {
	re := regexp.MustCompile(strings.Replace(reasonInLog.String(), "%s", regexp.QuoteMeta(file), 1))
	var reason string
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(logFile)
		if m := re.FindSubmatch(data); err == nil && m != nil {
			reason = string(m[1])
			return true
		}
		return false
	}, time.Minute, 200*time.Millisecond, "the kubelet logs why it refuses %s", file)
	return reason
}

func saToken(t *testing.T, c *minicluster.Cluster, namespace, name string) string {
	path, err := c.ServiceAccountToken(context.Background(), namespace, name, t.TempDir())
	require.NoError(t, err)
	return path
}

// kubeletStatus calls the kubelet's /pods directly with a token file and returns the status.
func kubeletStatus(t *testing.T, admin *rest.Config, tokenFile, node string) int {
	client, err := kubeletclient.New(admin, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: tokenFile, Via: kubeletclient.ViaKubelet})
	require.NoError(t, err)
	r := client.Pods(context.Background(), node)
	var e *kubeletclient.Error
	switch {
	case r.Err == nil:
		return 200
	case errors.As(r.Err, &e) && e.Kind == kubeletclient.Forbidden:
		return 403
	case errors.As(r.Err, &e) && e.Kind == kubeletclient.Unauthorized:
		return 401
	}
	t.Fatalf("unexpected: %v", r.Err)
	return 0
}

func sameNames(a, b []corev1.Pod) bool {
	names := func(pods []corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(names(a), names(b))
}
