package client

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
)

// pollInterval is how often the polling agent asks: 10 s, as the DaemonSet's --interval.
const pollInterval = 10 * time.Second

// changesPerHour is the churn an hour of the node is costed with: a pod created and deleted
// every minute.
const changesPerHour = 60

// counter relays each connection made to it to the kubelet, counting the bytes both ways as
// they pass: what the agent's way to its pods costs on the wire (TLS, HTTP/2 or gRPC framing
// included).
type counter struct {
	listener net.Listener
	bytes    atomic.Int64
}

func newCounter(b *testing.B, network, address, to string) *counter {
	l, err := net.Listen(network, address)
	if err != nil {
		b.Fatal(err)
	}
	c := &counter{listener: l}
	var mu sync.Mutex
	var conns []net.Conn
	b.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	go func() {
		for {
			agent, err := l.Accept()
			if err != nil {
				return
			}
			kubelet, err := net.Dial(network, to)
			if err != nil {
				_ = agent.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, agent, kubelet)
			mu.Unlock()
			for _, pair := range [][2]net.Conn{{agent, kubelet}, {kubelet, agent}} {
				go func() {
					_, _ = io.Copy(countingWriter{pair[1], &c.bytes}, pair[0])
					_ = pair[1].Close()
				}()
			}
		}
	}()
	return c
}

// live is how many bytes have passed so far.
func (c *counter) live() int64 { return c.bytes.Load() }

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (cw countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n.Add(int64(n))
	return n, err
}

// manifest writes (or, with remove, removes) the static pod change-<i> into dir.
func manifest(b *testing.B, dir string, i int, remove bool) string {
	name := fmt.Sprintf("change-%d", i)
	path := filepath.Join(dir, name+".yaml")
	var err error
	if remove {
		err = os.Remove(path)
	} else {
		err = os.WriteFile(path, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\nspec:\n  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10.2\n"), 0o644)
	}
	if err != nil {
		b.Fatal(err)
	}
	return name + "-bench" // the static pod's name: the manifest's, and the node's
}

// BenchmarkWatchVsPoll times, on a kubelet with 110 pods, how long a pod change takes to reach an
// agent: one that watches the kubelet's Pods API (WatchPods), and one that polls GET /pods over
// HTTPS every 10 s, each change made halfway between two polls (the average wait of a poll:
// one run's figure is its mean, not a draw). It also costs an hour of each on the wire, counted
// by a relay between agent and kubelet: the watch's first list and its events for a pod created
// and deleted every minute, against 360 polls of 110 pods; and its requests, one stream against
// 360. The poll reports the ratios, x-poll-10s/watch (notes/measurements.md sets their goals).
func BenchmarkWatchVsPoll(b *testing.B) {
	// Room for the pods the changes make: the watch makes them faster than the kubelet ends them.
	node := benchKubelet(b, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var times benchratio.Sides
	bytes, requests := benchratio.Sides{Of: "bytes"}, benchratio.Sides{Of: "requests"}
	changes := 0

	b.Run("watch", func(b *testing.B) {
		dir, err := os.MkdirTemp("", "watch-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
		relay := newCounter(b, "unix", filepath.Join(dir, "relay.sock"), node.socket)
		c, err := kubeletclient.New(nil, kubeletclient.Options{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: filepath.Join(dir, "relay.sock")})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		events := make(chan kubeletclient.PodEvent, 10000)
		ctx, stop := context.WithCancel(ctx)
		var watching sync.WaitGroup
		watching.Go(func() { _ = c.WatchPods(ctx, "bench", func(e kubeletclient.PodEvent) { events <- e }) })
		defer func() { stop(); watching.Wait() }()
		// await reads events until one of type want for each of names (or, without names, one).
		await := func(want kubeletclient.PodEventType, names ...string) {
			b.Helper()
			pending := map[string]bool{}
			for _, name := range names {
				pending[name] = true
			}
			timeout := time.After(2 * time.Minute)
			for {
				select {
				case e := <-events:
					if e.Type == kubeletclient.PodsBroken {
						b.Fatal(e.Err)
					}
					if e.Type != want || (len(names) > 0 && !pending[e.Pod.Name]) {
						continue
					}
					if e.Type == kubeletclient.PodAdded && e.Pod.Status.Phase == corev1.PodFailed {
						b.Fatalf("the kubelet did not admit %s: %s", e.Pod.Name, e.Pod.Status.Message)
					}
					if len(names) > 0 {
						delete(pending, e.Pod.Name)
					}
					if len(pending) == 0 {
						return
					}
				case <-timeout:
					b.Fatalf("no %s for %v within two minutes", want, slices.Collect(maps.Keys(pending)))
				}
			}
		}
		b.StopTimer()
		await(kubeletclient.PodsSynced)
		synced := relay.live()
		first := changes + 1
		b.StartTimer()
		for b.Loop() {
			changes++
			await(kubeletclient.PodAdded, manifest(b, node.manifests, changes, false))
		}
		times.Time(b, "watch")
		// Then each goes: the bytes of a change are those of its pod's every event, come and gone.
		var gone []string
		for i := first; i <= changes; i++ {
			gone = append(gone, manifest(b, node.manifests, i, true))
		}
		await(kubeletclient.PodDeleted, gone...)
		perHour := float64(synced) + changesPerHour*float64(relay.live()-synced)/float64(b.N)
		b.ReportMetric(perHour, "bytes/hour")
		b.ReportMetric(1, "requests/hour") // one WatchPods stream, open all hour
		bytes.Set("watch", perHour)
		requests.Set("watch", 1)
	})

	b.Run("poll-10s", func(b *testing.B) {
		relay := newCounter(b, "tcp", "127.0.0.1:0", node.url[len("https://"):])
		c, err := kubeletclient.New(nil, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: node.tokenFile, KubeletCAFile: node.caFile})
		if err != nil {
			b.Fatal(err)
		}
		// The agent: a poll every 10 s, its last answer kept with when it was asked.
		var mu sync.Mutex
		var last struct {
			asked time.Time
			pods  []string
		}
		polls, firstBytes := 0, int64(0)
		ctx, stop := context.WithCancel(ctx)
		var polling sync.WaitGroup
		polling.Go(func() {
			tick := time.NewTicker(pollInterval)
			defer tick.Stop()
			for {
				asked := time.Now()
				r := c.FetchURL(ctx, "https://"+relay.listener.Addr().String())
				if ctx.Err() != nil {
					return
				}
				if r.Err != nil {
					b.Error(r.Err)
					return
				}
				mu.Lock()
				last.asked, last.pods = asked, names(r.Pods)
				if polls++; polls == 1 {
					firstBytes = relay.live() // the TLS handshake, once a connection
				}
				mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
		defer func() { stop(); polling.Wait() }()
		// seen waits until a poll asked after since says whether the pod is there.
		seen := func(since time.Time, name string, there bool) {
			b.Helper()
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				mu.Lock()
				ok := last.asked.After(since) && slices.Contains(last.pods, "default/"+name) == there
				mu.Unlock()
				if ok {
					return
				}
			}
			b.Fatalf("no poll saw %s (there: %v) within two minutes", name, there)
		}
		b.StopTimer()
		seen(time.Time{}, "pod-000-bench", true)
		b.StartTimer()
		for b.Loop() {
			b.StopTimer()
			mu.Lock()
			halfway := last.asked.Add(pollInterval / 2)
			mu.Unlock()
			time.Sleep(time.Until(halfway))
			b.StartTimer()
			changed := time.Now()
			changes++
			name := manifest(b, node.manifests, changes, false)
			seen(changed, name, true)
			b.StopTimer()
			removed := time.Now()
			manifest(b, node.manifests, changes, true)
			seen(removed, name, false) // the next change, on a node of 110 pods again
			b.StartTimer()
		}
		times.Time(b, "poll-10s")
		mu.Lock()
		perPoll := float64(relay.live()-firstBytes) / float64(polls-1)
		mu.Unlock()
		perHour := float64(time.Hour/pollInterval) * perPoll
		b.ReportMetric(perHour, "bytes/hour")
		b.ReportMetric(float64(time.Hour/pollInterval), "requests/hour")
		bytes.Set("poll-10s", perHour)
		requests.Set("poll-10s", float64(time.Hour/pollInterval))
		times.Report(b, "poll-10s", "watch")
		bytes.Report(b, "poll-10s", "watch")
		requests.Report(b, "poll-10s", "watch")
	})
}
