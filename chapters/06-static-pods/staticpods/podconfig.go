package staticpods

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// PodConfig is the toy's pod configuration: one file Source merged into a stream of updates,
// the role of the real PodConfig (pkg/kubelet/config/config.go#L61-L71 (func NewPodConfig)).
type PodConfig struct {
	Source  *Source
	merger  *Merger
	updates chan kubetypes.PodUpdate
}

// NewPodConfig watches path for nodeName, re-listing every period.
func NewPodConfig(path string, nodeName types.NodeName, period time.Duration) *PodConfig {
	return &PodConfig{
		Source:  &Source{Path: path, NodeName: nodeName, Period: period},
		merger:  NewMerger(),
		updates: make(chan kubetypes.PodUpdate, 50), // the kubelet's buffer size
	}
}

// Updates is what Bootstrap.Run reads.
func (c *PodConfig) Updates() <-chan kubetypes.PodUpdate { return c.updates }

// Run watches and merges until ctx ends, and returns once its goroutines have.
func (c *PodConfig) Run(ctx context.Context) {
	sets := make(chan []*v1.Pod)
	var wg sync.WaitGroup
	wg.Go(func() { c.Source.Run(ctx, sets) })
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case set := <-sets:
			for _, u := range c.merger.Merge(set) {
				select {
				case c.updates <- u:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}
