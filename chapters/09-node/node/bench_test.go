package node

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/tier"
)

// minikubeStart is what `minikube start --driver=docker` takes on a laptop with its images
// cached, as minikube's own documentation and the issue that asked for this chapter put it:
// about a minute. It is a reference, not a measurement made here (no Docker runs here).
const minikubeStart = 60 * time.Second

// BenchmarkNodeStart boots a node and makes it a one-node cluster, as `minikube start` does,
// then stops it: the time to systemd, to kubeadm init, to every kube-system pod Ready, the
// teardown, the node's peak memory, and the ratio to minikube's minute.
//
//	sudo -E go test -run '^$' -bench NodeStart -benchtime 3x ./chapters/09-node/node/
func BenchmarkNodeStart(b *testing.B) {
	tier.Require(b, "node", Requirements(Options{Rootfs: rootfs, Components: components}))
	var timings Timings
	var teardown time.Duration
	var peak uint64
	for b.Loop() {
		dir, err := os.MkdirTemp("", "node-bench-")
		require.NoError(b, err)
		ctx := context.Background()
		n, err := Start(ctx, Options{Dir: dir, Rootfs: rootfs, Components: components, KubernetesVersion: "v1.37.2", StopWithParent: true})
		require.NoError(b, err)
		require.NoError(b, n.Bootstrap(ctx))
		p, err := n.PeakMemory()
		require.NoError(b, err)
		stop := time.Now()
		require.NoError(b, n.Stop(ctx))
		teardown += time.Since(stop)
		require.NoError(b, os.RemoveAll(dir))
		timings.Systemd += n.Timings.Systemd
		timings.KubeadmDone += n.Timings.KubeadmDone
		timings.Ready += n.Timings.Ready
		peak = max(peak, p)
	}
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(per(timings.Systemd), "s-to-systemd")
	b.ReportMetric(per(timings.KubeadmDone), "s-to-kubeadm-done")
	b.ReportMetric(per(timings.Ready), "s-to-ready")
	b.ReportMetric(per(teardown), "s-teardown")
	b.ReportMetric(float64(peak)/(1<<20), "MiB-peak")
	b.ReportMetric(minikubeStart.Seconds()/per(timings.Ready), "x-minikube-speed")
}
