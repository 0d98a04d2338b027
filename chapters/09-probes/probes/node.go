package probes

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/pkg/kubelet"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-minicluster/minicluster"
)

// statusRuntime is the kubelet's CRI runtime service with Status answered as the chapter says:
// the runtime's own answer, or RuntimeReady=false while down is set.
type statusRuntime struct {
	internalapi.RuntimeService
	down atomic.Bool
}

// Status is what the kubelet's runtime check (updateRuntimeUp, every 5 s) asks.
func (r *statusRuntime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	resp, err := r.RuntimeService.Status(ctx, verbose)
	if err != nil || !r.down.Load() {
		return resp, err
	}
	out := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}, Info: resp.Info}
	for _, c := range resp.GetStatus().GetConditions() {
		c = &runtimeapi.RuntimeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		if c.Type == runtimeapi.RuntimeReady {
			c.Status, c.Reason, c.Message = false, "Stopped", "chapter 09 stopped the runtime"
		}
		out.Status.Conditions = append(out.Status.Conditions, c)
	}
	return out, nil
}

// NodeOptions say how to run the node's side.
type NodeOptions struct {
	// NodeIP is the kubelet's address in the private network namespace.
	NodeIP string
	// StepTimeout bounds the wait for each step's outcome.
	StepTimeout time.Duration
	// Out receives the story.
	Out io.Writer
}

// RunNode starts a mini-cluster of one node (chapter 08's), stops and starts its runtime's
// readiness, and prints the Node's Ready condition as the kubelet posts it.
func RunNode(ctx context.Context, opts NodeOptions) error {
	var runtime *statusRuntime
	c, err := minicluster.Start(ctx, minicluster.Options{
		NodeIP: opts.NodeIP,
		Dependencies: func(_ string, deps *kubelet.Dependencies) {
			runtime = &statusRuntime{RuntimeService: deps.RemoteRuntimeService}
			deps.RemoteRuntimeService = runtime
		},
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	node := c.Nodes[0]
	fmt.Fprintf(opts.Out, "The real kubelet runs as node %q of a mini-cluster (etcd and kube-apiserver in this\n", node.Name)
	fmt.Fprintf(opts.Out, "process, as in chapter 08), in a private network namespace. Every 5 s it asks the runtime's\n")
	fmt.Fprintf(opts.Out, "Status; every %s (nodeStatusUpdateFrequency) it posts the Node's status when it changed.\n",
		node.Kubelet.Config.NodeStatusUpdateFrequency.Duration)
	steps := []struct {
		title  string
		down   bool
		ready  v1.ConditionStatus
		lesson string
	}{
		{"the runtime answers RuntimeReady=true", false, v1.ConditionTrue,
			"the kubelet's checks pass: Ready, with the kubelet's reason and message"},
		{"the runtime answers RuntimeReady=false", true, v1.ConditionFalse,
			"the next runtime check fails, and the next status the kubelet posts says why; the pods\n" +
				"keep running (in a cluster with a controller manager, unlike this one, the node controller\n" +
				"then taints the node: no new pods, and its pods are evicted after 5 minutes)"},
		{"the runtime answers RuntimeReady=true again", false, v1.ConditionTrue,
			"the kubelet posts Ready at the next update"},
	}
	for i, st := range steps {
		runtime.down.Store(st.down)
		cond, err := awaitReady(ctx, c, node.Name, st.ready, opts.StepTimeout)
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st.title, err)
		}
		fmt.Fprintf(opts.Out, "\n%2d. %s\n", i+1, st.title)
		fmt.Fprintf(opts.Out, "    Node %s: Ready=%s  %s  %q\n", node.Name, cond.Status, cond.Reason, cond.Message)
		for _, line := range splitLines(st.lesson) {
			fmt.Fprintf(opts.Out, "    %s\n", line)
		}
	}
	return nil
}

// awaitReady asks the apiserver every 200 ms until the Node's Ready condition has status want,
// and says what it last saw when it does not in time.
func awaitReady(ctx context.Context, c *minicluster.Cluster, name string, want v1.ConditionStatus, timeout time.Duration) (v1.NodeCondition, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last v1.NodeCondition
	for {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, cond := range node.Status.Conditions {
				if cond.Type == v1.NodeReady {
					last = cond
				}
			}
			if last.Status == want {
				return last, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("Ready=%s not seen within %s; last seen: Ready=%s %s %q", want, timeout, last.Status, last.Reason, last.Message)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
