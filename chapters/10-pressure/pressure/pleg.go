package pressure

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-minicluster/minicluster"
)

// PLEGOptions say how to run the PLEG story.
type PLEGOptions struct {
	// Config is the reading notes' configuration: the node's address, port and static pods.
	Config *kubeletconfig.KubeletConfiguration
	// StepTimeout bounds the wait for each step's outcome, on top of the kubelet's three minutes.
	StepTimeout time.Duration
	// Out receives the story.
	Out io.Writer
}

// stuckRuntime is the kubelet's CRI runtime service whose ListPodSandbox — the first call of
// the PLEG's relist, every second — does not answer while the runtime is stuck.
type stuckRuntime struct {
	internalapi.RuntimeService
	mu      sync.Mutex
	release chan struct{} // nil: answering; else closed when it answers again
}

func (r *stuckRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	release := r.release
	r.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.RuntimeService.ListPodSandbox(ctx, filter)
}

func (r *stuckRuntime) stick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.release = make(chan struct{})
}

func (r *stuckRuntime) answer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.release != nil {
		close(r.release)
		r.release = nil
	}
}

// plegSince is the part of the PLEG's message that differs from run to run: how long ago it last
// relisted, 3m4.2s.
var plegSince = regexp.MustCompile(`active (\d+m)[\d.]+s ago`)

// RunPLEG starts a mini-cluster of one node with the reading notes' configuration, stops the
// runtime answering the PLEG's relist, and waits for the Node's Ready condition to say so: the
// kubelet's threshold is three minutes, and the story waits them.
func RunPLEG(ctx context.Context, opts PLEGOptions) error {
	runtime := &stuckRuntime{}
	c, err := minicluster.Start(ctx, minicluster.Options{
		NodeIP:        opts.Config.Address,
		KubeletPort:   int(opts.Config.Port),
		StaticPodPath: opts.Config.StaticPodPath,
		Configure: func(_ string, _ *options.KubeletFlags, config *kubeletconfig.KubeletConfiguration) {
			config.SerializeImagePulls = opts.Config.SerializeImagePulls
		},
		Dependencies: func(_ string, deps *kubelet.Dependencies) {
			runtime.RuntimeService = deps.RemoteRuntimeService
			deps.RemoteRuntimeService = runtime
		},
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	defer runtime.answer() // a stopped kubelet's calls may still wait
	node := c.Nodes[0].Name
	fmt.Fprintf(opts.Out, "The real kubelet runs as node %q of a mini-cluster (as in chapter 08), in a private network\n", node)
	fmt.Fprintf(opts.Out, "namespace, with the reading notes' static pods. Its PLEG relists the runtime's pods every second\n")
	fmt.Fprintf(opts.Out, "(genericPlegRelistPeriod); the kubelet calls it unhealthy when the last relist that finished is\n")
	fmt.Fprintf(opts.Out, "older than three minutes (genericPlegRelistThreshold). This story waits those three minutes.\n")

	steps := []struct {
		title  string
		change func()
		ready  corev1.ConditionStatus
		lesson string
	}{
		{"the runtime answers", func() {}, corev1.ConditionTrue,
			"every relist finishes: Ready"},
		{"the runtime stops answering ListPodSandbox, the relist's first call", runtime.stick, corev1.ConditionFalse,
			"three minutes after the last relist finished, the runtime's health check fails, and the next\n" +
				"status the kubelet posts says why; meanwhile the containers run on, and nothing is wrong\n" +
				"but the kubelet's view of them"},
		{"the runtime answers again", runtime.answer, corev1.ConditionTrue,
			"the next relist finishes, and the next status is Ready"},
	}
	for i, st := range steps {
		st.change()
		timeout := opts.StepTimeout
		if st.ready == corev1.ConditionFalse {
			timeout += 3*time.Minute + 20*time.Second
		}
		cond, err := awaitReady(ctx, c, node, st.ready, timeout)
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st.title, err)
		}
		fmt.Fprintf(opts.Out, "\n%2d. %s\n", i+1, st.title)
		fmt.Fprintf(opts.Out, "    Node %s: Ready=%s  %s  %q\n", node, cond.Status, cond.Reason, plegSince.ReplaceAllString(cond.Message, "active $1… ago"))
		for _, line := range splitLines(st.lesson) {
			fmt.Fprintf(opts.Out, "    %s\n", line)
		}
	}
	return nil
}

// awaitReady asks the apiserver every 200 ms until the Node's Ready condition has status want.
func awaitReady(ctx context.Context, c *minicluster.Cluster, name string, want corev1.ConditionStatus, timeout time.Duration) (corev1.NodeCondition, error) {
	var last corev1.NodeCondition
	err := poll(ctx, timeout, "Ready="+string(want), func() (bool, string, error) {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = cond
			}
		}
		return last.Status == want, fmt.Sprintf("Ready=%s %s %q", last.Status, last.Reason, last.Message), nil
	})
	return last, err
}

func splitLines(s string) []string { return strings.Split(s, "\n") }
