package realkubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/kubernetes/pkg/kubelet/metrics/collectors"
)

// One process, several kubelets: every Kubelet.Run registers two custom metric collectors in
// the process-wide registries (pkg/kubelet/kubelet.go, initializeModules →
// metrics.RegisterCollectors), a kubelet with an apiserver client registers a third in
// NewMainKubelet (the pod certificate collector), and a second registration panics with
// "duplicate metrics collector registration attempted". The kubelet binary runs one kubelet per
// process and never meets it.
//
// So kubelets start one at a time: the previous kubelet's collectors are unregistered (by their
// descriptors, which is how prometheus identifies a collector), the new kubelet starts, and the
// next start waits until this one's Run has passed the registration — the moment its root
// directory gets "plugins_registry", which initializeModules creates right after. The price:
// an earlier kubelet's /metrics loses the volume-stats and log-size metrics.
var startMu sync.Mutex

// unregisterKubeletCollectors removes the collectors a previous kubelet registered, if any.
func unregisterKubeletCollectors() {
	for _, c := range []metrics.StableCollector{
		collectors.NewVolumeStatsCollector(nil),
		collectors.NewLogMetricsCollector(nil),
		collectors.PodCertificateCollectorFor(nil),
	} {
		c.Create(nil, c)
		legacyregistry.Registerer().Unregister(c)
		prometheus.Unregister(c)
	}
}

// waitMetricsRegistered returns once the kubelet rooted at rootDir has registered its
// collectors, i.e. once Run's initializeModules created rootDir/plugins_registry.
func waitMetricsRegistered(ctx context.Context, rootDir string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	marker := filepath.Join(rootDir, "plugins_registry")
	for {
		if _, err := os.Stat(marker); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubelet did not initialize its modules (no %s): %w", marker, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
