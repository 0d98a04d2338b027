// Package podjourney follows one static pod through the real kubelet, from the live process.
//
// It starts the real kubelet in this process (chapters/04-runkubelet/realkubelet: kubemark's
// hollow dependencies, a fake CRI runtime behind a real gRPC socket), records Go's execution
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
	logger := klog.FromContext(ctx)
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
	defer func() { _ = os.RemoveAll(dir) }()
	rec := &Recording{Pod: "default/" + podName + "-" + opts.NodeName, WaitedForRestart: opts.WaitForRestart}

	// The trace starts before the kubelet does, so that every goroutine the kubelet starts is
	// created inside it, with its creator's stack.
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		return nil, fmt.Errorf("start the execution tracer: %w", err)
	}
	tracing := true
	stopTrace := func() {
		if tracing {
			trace.Stop()
			tracing = false
		}
	}
	defer stopTrace()

	book := newNotebook()
	start := time.Now()
	k, err := realkubelet.Start(ctx, realkubelet.Options{
		NodeName:      opts.NodeName,
		StaticPodPath: dir,
		SecurePort:    -1,
		Dependencies: func(deps *kubelet.Dependencies) {
			deps.RemoteRuntimeService = &runtimeProbe{RuntimeService: deps.RemoteRuntimeService, book: book, latency: runtimeLatency}
			deps.TracerProvider = tracerProbe{book: book}
		},
	})
	if err != nil {
		return nil, err
	}
	defer k.Stop()

	wait := func(what string, match func(note) bool) error {
		ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
		return book.waitFor(ctx, what, match)
	}
	// syncedTwice matches once uid's container started and a second SyncPod has ended: the one
	// PLEG asked for after seeing the container run.
	syncedTwice := func(uid *string) func(note) bool {
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
	ended := func(name, uid string) func(note) bool {
		return func(n note) bool { return n.Name == "end "+name && n.UID == uid }
	}

	path := filepath.Join(dir, podName+".yaml")
	// put writes the manifest whole under a name the file source ignores (a leading dot), then
	// renames it into place: one inotify event, never a half-written file.
	put := func(version int) error {
		tmp := filepath.Join(dir, "."+podName+".yaml.tmp")
		if err := os.WriteFile(tmp, []byte(manifest(version)), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	}
	// mark settles first: each file operation finds the kubelet waiting, as it would find it
	// on a quiet node, so that the trace shows what the operation itself sets off.
	mark := func(phase string) error {
		time.Sleep(settleTime)
		if err := book.settle(ctx, settleTime); err != nil {
			return err
		}
		trace.Log(ctx, categoryJourney, phase)
		return nil
	}

	// The sync loop iterates once the runtime is up and PLEG has relisted; before that it
	// sleeps between checks. Its first housekeeping (every 2s, HandlePodCleanups) lists the
	// runtime's sandboxes: from then on it waits in its select, and the journey begins.
	housekeeping := func(n note) bool {
		return n.Name == "ListPodSandbox" && slices.ContainsFunc(n.Callers, func(fn string) bool {
			return strings.HasSuffix(fn, ".(*Kubelet).HandlePodCleanups")
		})
	}
	if err := wait("the sync loop's first housekeeping", housekeeping); err != nil {
		return nil, err
	}

	logger.V(1).Info("Adding the manifest", "path", path)
	if err := mark(PhaseAdd); err != nil {
		return nil, err
	}
	if err := put(1); err != nil {
		return nil, err
	}
	if err := wait("the pod to run", syncedTwice(&rec.UIDs[0])); err != nil {
		return nil, err
	}

	logger.V(1).Info("Editing the manifest", "path", path)
	if err := mark(PhaseEdit); err != nil {
		return nil, err
	}
	if err := put(2); err != nil {
		return nil, err
	}
	if err := wait("the old version to terminate", ended("syncTerminatedPod", rec.UIDs[0])); err != nil {
		return nil, err
	}
	if rec.UIDs[1], err = podUID(ctx, k, rec.UIDs[0]); err != nil {
		return nil, err
	}
	if opts.WaitForRestart {
		if err := wait("the new version to run", syncedTwice(&rec.UIDs[1])); err != nil {
			return nil, err
		}
	}

	logger.V(1).Info("Deleting the manifest", "path", path)
	if err := mark(PhaseDelete); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil {
		return nil, err
	}
	if opts.WaitForRestart {
		if err := wait("the pod to terminate", ended("syncTerminatedPod", rec.UIDs[1])); err != nil {
			return nil, err
		}
	} else if err := waitGone(ctx, k, opts.Timeout); err != nil {
		return nil, err
	}
	// Let the pod worker that was told to stop return; it does so right after it is woken.
	time.Sleep(200 * time.Millisecond)
	stopTrace()
	rec.Elapsed = time.Since(start)
	rec.Trace = buf.Bytes()
	return rec, nil
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
