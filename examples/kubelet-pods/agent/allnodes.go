package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

// AllNodes lists the nodes — one LIST, or none once c.WatchNodes runs — and asks each node's
// kubelet for ep with at most concurrency requests in flight (less than 1 is 1), within timeout
// overall (0: a minute). A node that fails has its Err set, explained (Explain); the others are
// unaffected. Results are sorted by node name.
func AllNodes(ctx context.Context, c *kubeletclient.Client, ep kubeletclient.ReadEndpoint, concurrency int, timeout time.Duration) ([]kubeletclient.Result, error) {
	switch {
	case timeout < 0:
		return nil, fmt.Errorf("all-nodes timeout %s: must be more than 0 (0: the default, 1 minute)", timeout)
	case timeout == 0:
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	deadline := func(node string, err error) error {
		e := &Error{Kind: Deadline, URL: node, Err: err, Timeout: timeout,
			Hint: "--all-nodes asks every kubelet within --all-nodes-timeout; raise it, or --concurrency to ask more at once."}
		if err == nil {
			e.Err = fmt.Errorf("node %s was not asked in time", node)
		}
		return e
	}
	results := make([]kubeletclient.Result, len(nodes))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(concurrency, 1), len(nodes)) {
		wg.Go(func() {
			for i := range next {
				results[i] = c.GetOf(ctx, &nodes[i], ep)
				results[i].Err, results[i].FellBack = Explain(ctx, c, results[i].Err), Explain(ctx, c, results[i].FellBack)
				if results[i].Err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
					results[i].Err = deadline(nodes[i].Name, results[i].Err)
				}
			}
		})
	}
	for i := range nodes {
		select {
		case next <- i:
		case <-ctx.Done():
			results[i] = kubeletclient.Result{Node: nodes[i].Name, Err: deadline(nodes[i].Name, nil)}
		}
	}
	close(next)
	wg.Wait()
	sort.Slice(results, func(i, j int) bool { return results[i].Node < results[j].Node })
	return results, nil
}
