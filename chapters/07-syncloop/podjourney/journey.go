// Package podjourney follows one static pod through the real kubelet, from the live process.
//
// It starts the real kubelet in this process (chapters/04-runkubelet/realkubelet: a hollow
// node's dependencies, a fake CRI runtime behind a real gRPC socket), records Go's execution
// trace (runtime/trace) from before the kubelet starts while it drops a manifest into the static
// pod directory, edits it and deletes it, and reads the trace back (golang.org/x/exp/trace).
// Two kinds of probe mark the moments that matter (probe.go): each CRI call the kubelet makes,
// and each span the kubelet opens (SyncPod, SyncTerminatingPod, SyncTerminatedPod). From a
// probe, the trace leads back
// through the scheduler's own records — which goroutine created this one, which goroutine
// woke it from which wait — to the inotify event that started it all (analyze.go). What is
// printed is that evidence (story.go); nothing in this package lists the kubelet's functions.
package podjourney

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
)

// Options say how to run the journey.
type Options struct {
	// NodeName is the kubelet's node name. Default realkubelet.DefaultNodeName.
	NodeName string
	// Timeout bounds each wait (the pod running, terminated, ...). Default 30s.
	Timeout time.Duration
	// WaitForRestart waits, after the edit, until the edited pod has started before deleting
	// it: 10 to 15 seconds more, because the kubelet starts a static pod's new version only
	// after its pod worker backs off (see the note). Without it the delete finds the new
	// version still waiting to start.
	WaitForRestart bool
}

// Phase names, in the order the journey runs them.
const (
	PhaseStart  = "start"
	PhaseAdd    = "add"
	PhaseEdit   = "edit"
	PhaseDelete = "delete"
)

// categoryJourney marks, in the execution trace, the moment before each phase's file operation.
const categoryJourney = "journey"

// Recording is the raw evidence of one run: the execution trace, and what the run learnt
// along the way.
type Recording struct {
	Trace []byte
	// Pod is namespace/name of the static pod as the kubelet names it (name-nodeName).
	Pod string
	// UIDs are the pod's UID before and after the edit.
	UIDs [2]string
	// WaitedForRestart says whether the edited pod was started before the delete.
	WaitedForRestart bool
	// Elapsed is how long the kubelet ran.
	Elapsed time.Duration
}

const podName = "web"

// runtimeLatency is how late the probed CRI calls are answered (see runtimeProbe).
const runtimeLatency = 5 * time.Millisecond

// settleTime is how long the kubelet must have been quiet before each file operation.
const settleTime = 200 * time.Millisecond

// manifest is the static pod; the label changes with each version, and so does the pod's UID:
// the file source hashes the pod it reads (pkg/kubelet/config/common.go).
func manifest(version int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
  labels:
    version: "v%d"
spec:
  containers:
  - name: nginx
    image: nginx:1.27
`, podName, version)
}

// Record starts the real kubelet with an empty static pod directory, records Go's execution
// trace while it adds, edits and deletes a manifest there, and returns the trace.
func Record(ctx context.Context, opts Options) (*Recording, error) {
	r, err := newRecorder(opts)
	if err != nil {
		return nil, err
	}
	defer r.removeDir()

	// The trace starts before the kubelet does, so that every goroutine the kubelet starts is
	// created inside it, with its creator's stack.
	tr, err := startTrace()
	if err != nil {
		return nil, err
	}
	defer tr.stop()

	stopKubelet, err := r.start(ctx)
	if err != nil {
		return nil, err
	}
	defer stopKubelet()
	if err := r.add(ctx); err != nil {
		return nil, err
	}
	if err := r.edit(ctx); err != nil {
		return nil, err
	}
	if err := r.delete(ctx); err != nil {
		return nil, err
	}
	return r.stopTrace(tr), nil
}

// recorder is one journey under way: its options, the static pod directory and the manifest
// in it, the running kubelet and its probes' notebook, and what the run has learnt so far.
type recorder struct {
	opts Options
	dir  string // the static pod directory
	path string // the manifest, in dir
	rec  *Recording
	// unregister takes dir's removal back from kubeletlog.AtExit, which does it should the
	// kubelet end the process.
	unregister func()

	book    *notebook
	k       *realkubelet.Kubelet
	started time.Time
}

// newRecorder fills in the defaults of opts and makes the static pod directory, empty.
func newRecorder(opts Options) (*recorder, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.NodeName == "" {
		opts.NodeName = realkubelet.DefaultNodeName
	}
	dir, err := os.MkdirTemp("", "syncloop-manifests-")
	if err != nil {
		return nil, err
	}
	return &recorder{
		opts:       opts,
		dir:        dir,
		path:       filepath.Join(dir, podName+".yaml"),
		rec:        &Recording{Pod: "default/" + podName + "-" + opts.NodeName, WaitedForRestart: opts.WaitForRestart},
		unregister: kubeletlog.AtExit(func() { _ = os.RemoveAll(dir) }),
	}, nil
}

func (r *recorder) removeDir() {
	_ = os.RemoveAll(r.dir)
	r.unregister()
}

// start runs the real kubelet on the empty static pod directory, its CRI runtime service and
// its TracerProvider wrapped in the probes (probe.go), and returns once its sync loop waits for
// work, with the func that stops the kubelet. Before any pod, the kubelet's first
// updateRuntimeUp finds the runtime ready and starts the runtime-dependent modules; the sync
// loop iterates once the runtime is up and PLEG has relisted, and sleeps between checks before
// that. Its first housekeeping (every 2s, HandlePodCleanups) lists the runtime's sandboxes:
// from then on it waits in its select, and the journey begins.
func (r *recorder) start(ctx context.Context) (stop func(), err error) {
	r.book = newNotebook()
	r.started = time.Now()
	k, err := realkubelet.Start(ctx, realkubelet.Options{
		NodeName:      r.opts.NodeName,
		StaticPodPath: r.dir,
		SecurePort:    -1,
		Dependencies: func(deps *kubelet.Dependencies) {
			deps.RemoteRuntimeService = &runtimeProbe{RuntimeService: deps.RemoteRuntimeService, book: r.book, latency: runtimeLatency}
			deps.TracerProvider = tracerProbe{book: r.book}
		},
	})
	if err != nil {
		return nil, err
	}
	r.k = k
	if err := r.wait(ctx, "the sync loop's first housekeeping", firstHousekeeping); err != nil {
		k.Stop()
		return nil, err
	}
	return k.Stop, nil
}

// add drops the manifest into the directory. The file source's inotify watch sees it, the
// config merge sends ADD, and the sync loop's HandlePodAdditions starts a pod worker for the
// new UID, whose SyncPod creates the sandbox and starts the container; PLEG sees the container
// run, and the sync loop wakes the worker for a second SyncPod. add returns once that one has
// ended, with the pod's UID in rec.UIDs[0].
func (r *recorder) add(ctx context.Context) error {
	klog.FromContext(ctx).V(1).Info("Adding the manifest", "path", r.path)
	if err := r.mark(ctx, PhaseAdd); err != nil {
		return err
	}
	if err := r.put(1); err != nil {
		return err
	}
	return r.wait(ctx, "the pod to run", syncedTwice(&r.rec.UIDs[0]))
}

// edit rewrites the manifest with a new label. A static pod's UID is a hash of its manifest, so
// the merge sends REMOVE for the old UID and ADD for the new one: the old version's pod worker
// runs SyncTerminatingPod, then SyncTerminatedPod, while a new worker may not start the new
// version until the old one has terminated, and once refused waits for the pod workers'
// back-off. edit returns once the old version has terminated, with the new UID (read from
// /pods) in rec.UIDs[1]; with Options.WaitForRestart, once the new version runs.
func (r *recorder) edit(ctx context.Context) error {
	klog.FromContext(ctx).V(1).Info("Editing the manifest", "path", r.path)
	if err := r.mark(ctx, PhaseEdit); err != nil {
		return err
	}
	if err := r.put(2); err != nil {
		return err
	}
	if err := r.wait(ctx, "the old version to terminate", ended("syncTerminatedPod", r.rec.UIDs[0])); err != nil {
		return err
	}
	var err error
	if r.rec.UIDs[1], err = podUID(ctx, r.k, r.rec.UIDs[0]); err != nil {
		return err
	}
	if r.opts.WaitForRestart {
		return r.wait(ctx, "the new version to run", syncedTwice(&r.rec.UIDs[1]))
	}
	return nil
}

// delete removes the manifest: the merge sends REMOVE, and the sync loop's HandlePodRemoves
// wakes the new version's pod worker. By default that worker never started the new version:
// it returns, and delete waits until /pods lists no pod. With Options.WaitForRestart the new
// version runs, and delete waits for its SyncTerminatedPod.
func (r *recorder) delete(ctx context.Context) error {
	klog.FromContext(ctx).V(1).Info("Deleting the manifest", "path", r.path)
	if err := r.mark(ctx, PhaseDelete); err != nil {
		return err
	}
	if err := os.Remove(r.path); err != nil {
		return err
	}
	if r.opts.WaitForRestart {
		return r.wait(ctx, "the pod to terminate", ended("syncTerminatedPod", r.rec.UIDs[1]))
	}
	return waitGone(ctx, r.k, r.opts.Timeout)
}

// stopTrace lets the pod worker that the delete told to stop return (it does so right after it
// is woken), then stops the trace and completes the recording.
func (r *recorder) stopTrace(tr *executionTrace) *Recording {
	time.Sleep(200 * time.Millisecond)
	r.rec.Trace = tr.stop()
	r.rec.Elapsed = time.Since(r.started)
	return r.rec
}

// put writes the manifest whole under a name the file source ignores (a leading dot), then
// renames it into place: one inotify event, never a half-written file.
func (r *recorder) put(version int) error {
	tmp := filepath.Join(r.dir, "."+podName+".yaml.tmp")
	if err := os.WriteFile(tmp, []byte(manifest(version)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.path)
}

// mark settles first: each file operation finds the kubelet waiting, as it would find it on a
// quiet node, so that the trace shows what the operation itself sets off. Then it marks the
// phase in the trace.
func (r *recorder) mark(ctx context.Context, phase string) error {
	time.Sleep(settleTime)
	if err := r.book.settle(ctx, settleTime); err != nil {
		return err
	}
	trace.Log(ctx, categoryJourney, phase)
	return nil
}

// wait returns once a probe's note satisfies match, or fails after opts.Timeout.
func (r *recorder) wait(ctx context.Context, what string, match func(note) bool) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	return r.book.waitFor(ctx, what, match)
}

// firstHousekeeping matches the sync loop's first housekeeping: HandlePodCleanups listing the
// runtime's sandboxes.
func firstHousekeeping(n note) bool {
	return n.Name == "ListPodSandbox" && slices.ContainsFunc(n.Callers, func(fn string) bool {
		return strings.HasSuffix(fn, ".(*Kubelet).HandlePodCleanups")
	})
}

// syncedTwice matches once uid's container started and a second SyncPod has ended: the one
// PLEG asked for after seeing the container run. While *uid is empty, the first
// StartContainer sets it.
func syncedTwice(uid *string) func(note) bool {
	started, ends := false, 0
	return func(n note) bool {
		if *uid == "" && n.Name == "StartContainer" {
			*uid = n.UID
		}
		if n.UID != *uid || *uid == "" {
			return false
		}
		switch n.Name {
		case "StartContainer":
			started = true
		case "end syncPod":
			if started {
				ends++
			}
		}
		return ends >= 2
	}
}

// ended matches the end of the span the kubelet opened under name for uid (syncPod,
// syncTerminatingPod, syncTerminatedPod).
func ended(name, uid string) func(note) bool {
	return func(n note) bool { return n.Name == "end "+name && n.UID == uid }
}

// executionTrace is Go's execution tracer, writing into memory.
type executionTrace struct {
	buf     bytes.Buffer
	tracing bool
}

func startTrace() (*executionTrace, error) {
	t := &executionTrace{}
	if err := trace.Start(&t.buf); err != nil {
		return nil, fmt.Errorf("start the execution tracer: %w", err)
	}
	t.tracing = true
	return t, nil
}

// stop stops the tracer, if it still runs, and returns the trace.
func (t *executionTrace) stop() []byte {
	if t.tracing {
		trace.Stop()
		t.tracing = false
	}
	return t.buf.Bytes()
}

// podUID returns the UID of the pod the kubelet has, other than old.
func podUID(ctx context.Context, k *realkubelet.Kubelet, old string) (string, error) {
	list, err := k.Pods(ctx)
	if err != nil {
		return "", err
	}
	for _, p := range list {
		if string(p.UID) != old {
			return string(p.UID), nil
		}
	}
	return "", fmt.Errorf("after the edit /pods lists no pod other than UID %s", old)
}

// waitGone polls /pods until the kubelet has no pod.
func waitGone(ctx context.Context, k *realkubelet.Kubelet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list, err := k.Pods(ctx)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kubelet still has %d pod(s) after the manifest was deleted", len(list))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
