package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-minicluster/minicluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// podDir writes n small static pod manifests: 110 is the kubelet's default maxPods.
func podDir(b *testing.B, n int) string {
	dir := b.TempDir()
	for i := range n {
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-%03d\n  labels: {app: bench}\nspec:\n  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10.2\n", i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pod-%03d.yaml", i)), []byte(m), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// benchNode is a kubelet with its pods: its HTTPS URL, the CA of its certificate, a token it
// lets read its pods, its static pod directory and its Pods API socket.
type benchNode struct {
	url, caFile, tokenFile string
	manifests, socket      string
}

// benchKubelet starts a kubelet with 110 pods (the default maxPods) that authenticates tokens
// through a review server and has no client CA file, so that it offers HTTP/2. It admits maxPods
// pods (0: 110).
func benchKubelet(b *testing.B, maxPods int32) benchNode {
	const n = 110
	s := newCredentials(b)
	serving := filepath.Join(s.dir, "serving.crt")
	reviewClient, err := s.reviews.Client()
	if err != nil {
		b.Fatal(err)
	}
	manifests := podDir(b, n)
	k, err := realkubelet.Start(context.Background(), realkubelet.Options{
		NodeName: "bench", StaticPodPath: manifests, ReadOnlyPort: -1,
		TLSCertFile: serving, TLSKeyFile: strings.TrimSuffix(serving, ".crt") + ".key",
		Webhook: true, AuthClient: reviewClient,
		Configure: func(_ *options.KubeletFlags, c *kubeletconfig.KubeletConfiguration) {
			if maxPods > 0 {
				c.MaxPods = maxPods
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(k.Stop)
	c, err := kubeletclient.New(nil, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: s.tokens["reader"], KubeletCAFile: s.caFile})
	if err != nil {
		b.Fatal(err)
	}
	waitUntil(b, func() (bool, string) { // the kubelet serves them all
		r := c.FetchURL(context.Background(), k.SecureURL)
		return r.Err == nil && len(r.Pods) == n, fmt.Sprintf("%d pods, error %v", len(r.Pods), r.Err)
	})
	return benchNode{url: k.SecureURL, caFile: s.caFile, tokenFile: s.tokens["reader"], manifests: manifests, socket: podsAPISocket(k.RootDir)}
}

// BenchmarkFetch compares the client with the least a program can do: one net/http GET with the
// token and a JSON decode, on the same kubelet, side by side. The bare side reports the ratio,
// x-client/bare-net-http (notes/measurements.md sets its goal).
func BenchmarkFetch(b *testing.B) {
	n := benchKubelet(b, 0)
	url, caFile, tokenFile := n.url, n.caFile, n.tokenFile
	ctx := context.Background()
	var sides benchratio.Sides
	b.Run("client", func(b *testing.B) {
		c, err := kubeletclient.New(nil, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: tokenFile, KubeletCAFile: caFile})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if r := c.FetchURL(ctx, url); r.Err != nil || len(r.Pods) != 110 {
				b.Fatal(r.Err)
			}
		}
		sides.Time(b, "client")
		sides.Report(b, "client", "bare-net-http")
	})
	b.Run("bare-net-http", func(b *testing.B) {
		token, err := readFile(tokenFile)
		if err != nil {
			b.Fatal(err)
		}
		pool, err := loadPool(caFile)
		if err != nil {
			b.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
		for b.Loop() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/pods", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var list corev1.PodList
			err = json.NewDecoder(resp.Body).Decode(&list)
			_ = resp.Body.Close()
			if err != nil || len(list.Items) != 110 {
				b.Fatal(err)
			}
		}
		sides.Time(b, "bare-net-http")
		sides.Report(b, "client", "bare-net-http")
	})
}

// BenchmarkPoll100 polls the same kubelet 100 times with one client, over HTTP/2 and HTTP/1.1.
// HTTP/1.1 reports the ratio, x-HTTP2.0/HTTP1.1.
func BenchmarkPoll100(b *testing.B) {
	n := benchKubelet(b, 0)
	url, caFile, tokenFile := n.url, n.caFile, n.tokenFile
	var sides benchratio.Sides
	for _, proto := range []string{"HTTP/2.0", "HTTP/1.1"} {
		b.Run(proto, func(b *testing.B) {
			c, err := kubeletclient.New(nil, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: tokenFile, KubeletCAFile: caFile, HTTP1: proto == "HTTP/1.1"})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				for range 100 {
					r := c.FetchURL(context.Background(), url)
					if r.Err != nil || r.Protocol != proto {
						b.Fatalf("%v (%s)", r.Err, r.Protocol)
					}
				}
			}
			sides.Time(b, strings.ReplaceAll(proto, "/", ""))
			sides.Report(b, "HTTP2.0", "HTTP1.1")
		})
	}
}

// BenchmarkAllNodes fetches every node's pods with --all-nodes on a mini-cluster of one node and
// of four, each node running 110 pods: the cost of more nodes, asked eight at a time. Four nodes
// report the ratio, x-nodes=4/nodes=1 (notes/measurements.md sets its goal).
func BenchmarkAllNodes(b *testing.B) {
	tier.Require(b, "private network", noNetns)
	ip, _ := netns.Inside()
	dir := podDir(b, 110)
	var sides benchratio.Sides
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var names []string
			for i := range n {
				names = append(names, fmt.Sprintf("bench-%d", i))
			}
			ctx := context.Background()
			c, err := minicluster.Start(ctx, minicluster.Options{NodeNames: names, NodeIP: ip, StaticPodPath: dir})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Stop()
			if err := c.WaitForNodesReady(ctx); err != nil {
				b.Fatal(err)
			}
			admin, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
			if err != nil {
				b.Fatal(err)
			}
			client, err := kubeletclient.New(admin, kubeletclient.Options{Auth: kubeletclient.AuthKubeconfig, Via: kubeletclient.ViaKubelet})
			if err != nil {
				b.Fatal(err)
			}
			waitUntil(b, func() (bool, string) { // every kubelet serves its 110 pods: no answer is no success
				results, err := agent.AllNodes(ctx, client, kubeletclient.ReadEndpoints["pods"], 8, 0)
				ok := err == nil && len(results) == n
				var seen []string
				for _, r := range results {
					ok = ok && r.Err == nil && len(r.Pods) == 110
					seen = append(seen, fmt.Sprintf("%s: %d pods, error %v", r.Node, len(r.Pods), r.Err))
				}
				return ok, fmt.Sprintf("%d of %d nodes answered (error %v): %s", len(results), n, err, strings.Join(seen, "; "))
			})
			for b.Loop() {
				results, err := agent.AllNodes(ctx, client, kubeletclient.ReadEndpoints["pods"], 8, 0)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range results {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
			sides.Time(b, fmt.Sprintf("nodes=%d", n))
			sides.Report(b, "nodes=4", "nodes=1")
		})
	}
}

// waitUntil polls cond for up to two minutes; cond says whether it holds, and what it saw.
func waitUntil(b *testing.B, cond func() (bool, string)) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the kubelets did not serve their pods within two minutes; the last answer: %s", saw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
