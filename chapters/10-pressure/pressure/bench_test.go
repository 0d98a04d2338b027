package pressure

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/02-config/configload"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// BenchmarkEviction measures how long the real kubelet takes, once the node's statistics show
// memory.available below the reading notes' evictionHard (node.yaml's spike), to evict its first
// pod (its log line "pod is evicted successfully") and to post MemoryPressure=True in the Node's
// status, with the Node's status computed every nodeStatusUpdateFrequency of 10 s (the default,
// and the reading notes') and of 1 s. The eviction waits for the eviction manager's next round,
// every evictionMonitoringPeriod (10 s, not configurable), whatever the status period; the
// condition also waits for the next status the kubelet computes. The sides report their time to
// MemoryPressure over each other, x-to-MemoryPressure:…=10s/…=1s, and so their time to the first
// eviction, which the status period does not change. Each operation starts a mini-cluster of its
// own, so that the first round after the spike is the one measured.
func BenchmarkEviction(b *testing.B) {
	tier.Require(b, "private network", noNetns)
	ctx := context.Background()
	toPressure := benchratio.Sides{Of: "to-MemoryPressure"}
	toEviction := benchratio.Sides{Of: "to-first-eviction"}
	for _, every := range []time.Duration{10 * time.Second, time.Second} {
		side := fmt.Sprintf("status=%s", every) // the side's nodeStatusUpdateFrequency
		b.Run(side, func(b *testing.B) {
			config, err := configload.LoadConfigFile(ctx, repo.Path("examples", "kubelet-config.yaml"))
			if err != nil {
				b.Fatal(err)
			}
			config.Address, config.Port = nodeIP, 0 // the namespace's own address, a port picked at run time
			config.NodeStatusUpdateFrequency.Duration = every
			scenario, static, err := LoadScenario(repo.Path("chapters", "10-pressure", "node.yaml"), config.StaticPodPath, types.NodeName("walkthrough"))
			if err != nil {
				b.Fatal(err)
			}
			var evicted, pressure time.Duration
			for b.Loop() {
				e, p, err := timeToEviction(ctx, EvictionOptions{Config: config, Scenario: scenario, Static: static,
					TransitionPeriod: 30 * time.Second, StepTimeout: 2 * time.Minute, Out: io.Discard})
				if err != nil {
					b.Fatal(err)
				}
				evicted += e
				pressure += p
			}
			b.ReportMetric(evicted.Seconds()/float64(b.N), "s-to-first-eviction/op")
			b.ReportMetric(pressure.Seconds()/float64(b.N), "s-to-MemoryPressure/op")
			toPressure.Set(side, pressure.Seconds()/float64(b.N))
			toEviction.Set(side, evicted.Seconds()/float64(b.N))
			toPressure.Report(b, "status=10s", "status=1s")
			toEviction.Report(b, "status=10s", "status=1s")
		})
	}
}

// timeToEviction starts the eviction story's mini-cluster, runs its pods, takes the node's
// memory below the threshold, and returns how long the kubelet took to evict the first pod and
// to post MemoryPressure=True.
func timeToEviction(ctx context.Context, opts EvictionOptions) (evicted, pressure time.Duration, err error) {
	s, err := startEviction(ctx, opts)
	if err != nil {
		return 0, 0, err
	}
	defer s.cluster.Stop()
	if err := s.allRunning(ctx); err != nil {
		return 0, 0, err
	}
	lines, _ := s.tap.since(0)
	start := time.Now()
	s.stats.setSystem(uint64(opts.Scenario.System.Value() + opts.Scenario.Spike.Value()))
	err = poll(ctx, time.Minute, "the first eviction and MemoryPressure=True", func() (bool, string, error) {
		if after, _ := s.tap.since(len(lines)); evicted == 0 && len(evictedIn(after)) > 0 {
			evicted = time.Since(start)
		}
		node, err := s.cluster.Client.CoreV1().Nodes().Get(ctx, string(s.node), metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range node.Status.Conditions {
			if pressure == 0 && c.Type == corev1.NodeMemoryPressure && c.Status == corev1.ConditionTrue {
				pressure = time.Since(start)
			}
		}
		return evicted > 0 && pressure > 0, fmt.Sprintf("evicted after %s, MemoryPressure after %s", evicted, pressure), nil
	})
	return evicted, pressure, err
}
