package pressure

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
)

// BackOffOptions say how to run the CrashLoopBackOff story.
type BackOffOptions struct {
	// RunFor is how long each start of the container runs before it exits.
	RunFor time.Duration
	// MaxRestartPeriod is the kubelet's crashLoopBackOff.maxContainerRestartPeriod.
	MaxRestartPeriod time.Duration
	// Starts is how many starts of the container to watch.
	Starts int
	// StepTimeout bounds the wait for each start, on top of the run and the back-off.
	StepTimeout time.Duration
	// Out receives the story.
	Out io.Writer
}

// crashManifest is the static pod whose container keeps exiting.
const crashManifest = `apiVersion: v1
kind: Pod
metadata:
  name: crash
  namespace: default
spec:
  containers:
  - name: app
    image: registry.k8s.io/pause:3.10.1
`

// A start is one run of the container, as the runtime saw it.
type start struct {
	id                string
	started, finished time.Time
}

// exiter ends each container of the fake runtime runFor after it started, with exit code 1, as
// a process that fails would: the kubelet learns of it at its next relist.
type exiter struct {
	fake   *apitest.FakeRuntimeService
	runFor time.Duration

	mu     sync.Mutex
	starts map[string]*start
}

func (e *exiter) run(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		e.fake.Lock()
		e.mu.Lock()
		for id, c := range e.fake.Containers {
			if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				continue
			}
			started := time.Unix(0, c.StartedAt)
			if _, ok := e.starts[id]; !ok {
				e.starts[id] = &start{id: id, started: started}
			}
			if now.Sub(started) >= e.runFor {
				c.State, c.FinishedAt, c.ExitCode, c.Reason = runtimeapi.ContainerState_CONTAINER_EXITED, now.UnixNano(), 1, "Error"
				e.starts[id].finished = now
			}
		}
		e.mu.Unlock()
		e.fake.Unlock()
	}
}

// seen is every start so far, in order.
func (e *exiter) seen() []start {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]start, 0, len(e.starts))
	for _, s := range e.starts {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].started.Before(out[j].started) })
	return out
}

// RunBackOff runs the real kubelet standalone with one static pod whose container exits a
// while after each start, and tells the waits the kubelet puts between the restarts.
func RunBackOff(ctx context.Context, opts BackOffOptions) error {
	work, err := os.MkdirTemp("", "kubelet-walkthrough-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "crash.yaml"), []byte(crashManifest), 0o600); err != nil {
		return err
	}
	events := newEventLog()
	tap := newLogTap(logSyncError)
	k, err := realkubelet.Start(tap.context(ctx), realkubelet.Options{
		StaticPodPath: work,
		Configure: func(_ *options.KubeletFlags, config *kubeletconfig.KubeletConfiguration) {
			config.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: opts.MaxRestartPeriod}
		},
		Dependencies: func(deps *kubelet.Dependencies) { deps.Recorder = events.recorder },
	})
	if err != nil {
		return err
	}
	defer k.Stop()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go events.drain(ctx)
	e := &exiter{fake: k.FakeRuntime().RuntimeService, runFor: opts.RunFor, starts: map[string]*start{}}
	go e.run(ctx)

	fmt.Fprintf(opts.Out, "The real kubelet (k8s.io/kubernetes %s) runs standalone with one static pod, crash, whose\n", realkubelet.Version())
	fmt.Fprintf(opts.Out, "container this chapter's runtime ends %s after each start, with exit code 1, as a process\n", opts.RunFor)
	fmt.Fprintf(opts.Out, "that fails would; the kubelet sees it exit at its next relist and starts it again.\n")
	fmt.Fprintf(opts.Out, "crashLoopBackOff.maxContainerRestartPeriod: %s (feature KubeletCrashLoopBackOffMax, beta and on\n", opts.MaxRestartPeriod)
	fmt.Fprintf(opts.Out, "in v1.37; the default is 5m0s)\n\n")

	for n := 1; n <= opts.Starts; n++ {
		wait := opts.RunFor + opts.MaxRestartPeriod*3/2 + opts.StepTimeout
		err := poll(ctx, wait, fmt.Sprintf("start %d", n), func() (bool, string, error) {
			starts := e.seen()
			return len(starts) >= n, fmt.Sprintf("%d starts, the container %s", len(starts), containerState(ctx, k)), nil
		})
		if err != nil {
			return err
		}
		starts := e.seen()
		switch {
		case n == 1:
			fmt.Fprintf(opts.Out, " start 1: the container starts\n")
		case n == 2:
			// The first back-off is 10s, or the cap when that is less (func newCrashLoopBackOff).
			fmt.Fprintf(opts.Out, " start 2: at once after the first exit: no back-off yet (the kubelet notes one of %s for the next)\n",
				min(10*time.Second, opts.MaxRestartPeriod))
		default:
			exited, restarted := starts[n-2].finished, starts[n-1].started
			message, backoff, err := backOffBetween(tap, exited, restarted)
			if err != nil && exited.Sub(starts[n-2].started) > crashLoopBackOffReset {
				// The back-off's entry expired while the container ran: the kubelet starts over.
				fmt.Fprintf(opts.Out, " start %d: at once: the one before ran more than %s, so the back-off starts over\n", n, crashLoopBackOffReset)
				continue
			}
			if err != nil {
				return fmt.Errorf("start %d: %w", n, err)
			}
			// The pod worker is requeued for the back-off's end, jittered up to half as much again
			// (pkg/kubelet/pod_workers.go#L1538-L1547 (backoff := p.backOffPeriod)), and the sync loop takes it at its next
			// one-second tick: a start sooner than the back-off, or much later, is not the kubelet's.
			if waited := restarted.Sub(exited); waited < backoff-100*time.Millisecond || waited > backoff*3/2+2*time.Second {
				return fmt.Errorf("start %d came %s after the exit, the kubelet's back-off was %s", n, waited, backoff)
			}
			fmt.Fprintf(opts.Out, " start %d: after the back-off the kubelet's log gave: %q\n", n, message)
		}
	}
	fmt.Fprintf(opts.Out, "\nEach start came no sooner than its back-off after the exit before it (the runtime's clock).\n")
	if ev := events.first("BackOff"); ev != "" {
		fmt.Fprintf(opts.Out, "The kubelet's event meanwhile: %s\n", ev)
	}
	pods, err := k.Pods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(opts.Out, "/pods: %s, container %s, restartCount %d\n", p.Name, cs.Name, cs.RestartCount)
		}
	}
	return nil
}

// containerState is the container's state as /pods shows it.
func containerState(ctx context.Context, k *realkubelet.Kubelet) string {
	pods, err := k.Pods(ctx)
	if err != nil {
		return err.Error()
	}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			switch {
			case cs.State.Waiting != nil:
				return "waiting: " + cs.State.Waiting.Reason
			case cs.State.Running != nil:
				return "running"
			case cs.State.Terminated != nil:
				return "terminated: " + cs.State.Terminated.Reason
			}
		}
	}
	return "not in /pods"
}

// crashLoopBackOffReset is how long a container must run for the kubelet to forget its back-off:
// the back-off's HasExpiredFunc (pkg/kubelet/kubelet.go#L1088-L1090
// (klet.crashLoopBackOff.HasExpiredFunc)).
const crashLoopBackOffReset = 600 * time.Second

// logSyncError is the pod worker's line when a sync of the pod fails — as it does, with
// CrashLoopBackOff, while the container waits out its back-off
// (pkg/kubelet/kuberuntime/kuberuntime_manager.go#L2077-L2109 (func (m *kubeGenericRuntimeManager) doBackOff)).
const logSyncError = "Error syncing pod, skipping"

// backOffMessage is the back-off's part of that line's error.
var backOffMessage = regexp.MustCompile(`back-off (\S+) restarting failed container=\S+ pod=[^"\s]+`)

// backOffBetween is the last back-off the kubelet logged between an exit and the next start.
func backOffBetween(tap *logTap, exited, restarted time.Time) (string, time.Duration, error) {
	lines, _ := tap.since(0)
	message := ""
	for _, l := range lines {
		if l.at.After(exited) && l.at.Before(restarted) && l.err != nil {
			if m := backOffMessage.FindString(l.err.Error()); m != "" {
				message = m
			}
		}
	}
	if message == "" {
		return "", 0, fmt.Errorf("the kubelet logged no back-off between the exit and the start")
	}
	backoff, err := time.ParseDuration(backOffMessage.FindStringSubmatch(message)[1])
	return message, backoff, err
}

// eventLog is a recorder of the kubelet's events that keeps them as the kubelet words them:
// client-go's FakeRecorder, which the kubelet also takes for a sign to leave /dev/kmsg alone
// (pkg/kubelet/oom/oom_watcher_linux.go#L47-L65 (func NewWatcher)).
type eventLog struct {
	recorder *record.FakeRecorder
	mu       sync.Mutex
	events   []string
}

func newEventLog() *eventLog { return &eventLog{recorder: record.NewFakeRecorder(100)} }

// drain keeps every event until ctx ends: the recorder's channel blocks the kubelet when full.
func (l *eventLog) drain(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-l.recorder.Events:
			l.mu.Lock()
			l.events = append(l.events, e)
			l.mu.Unlock()
		}
	}
}

// all is every event kept with reason, as "TYPE REASON MESSAGE".
func (l *eventLog) all(reason string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if f := strings.SplitN(e, " ", 3); len(f) == 3 && f[1] == reason {
			out = append(out, e)
		}
	}
	return out
}

func (l *eventLog) first(reason string) string {
	if all := l.all(reason); len(all) > 0 {
		return all[0]
	}
	return ""
}
