package minicluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// BenchmarkStart measures a cold start of the whole cluster — etcd, apiserver, kubelets — until
// every Node is Ready and until every static pod has its mirror pod, for one node and for three,
// and reports the process's peak resident memory (VmHWM: the peak of the whole benchmark process
// so far, so the second sub-benchmark's includes the first's). Three nodes report their time to
// Ready over one node's, x-to-ready:nodes=3/nodes=1.
func BenchmarkStart(b *testing.B) {
	tier.Require(b, "private network", noNetns)
	sides := benchratio.Sides{Of: "to-ready"}
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			var names []string
			for i := range nodes {
				names = append(names, fmt.Sprintf("bench-%d", i))
			}
			var toReady, toMirror time.Duration
			for b.Loop() {
				ctx := context.Background()
				start := time.Now()
				c, err := Start(ctx, Options{NodeNames: names, NodeIP: nodeIP, StaticPodPath: repo.Path("examples", "static-pods")})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.WaitForNodesReady(ctx); err != nil {
					b.Fatal(err)
				}
				toReady += time.Since(start)
				if _, err := c.waitForMirrorPods(ctx, 5*nodes, ""); err != nil {
					b.Fatal(err)
				}
				toMirror += time.Since(start)
				c.Stop()
			}
			b.ReportMetric(toReady.Seconds()/float64(b.N), "s-to-ready/op")
			b.ReportMetric(toMirror.Seconds()/float64(b.N), "s-to-mirrors/op")
			b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
			sides.Set(fmt.Sprintf("nodes=%d", nodes), toReady.Seconds()/float64(b.N))
			sides.Report(b, "nodes=3", "nodes=1")
		})
	}
}

// peakRSSMiB reads VmHWM, the process's peak resident set, from /proc/self/status.
func peakRSSMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}
