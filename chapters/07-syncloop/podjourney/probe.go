package podjourney

import (
	"context"
	"fmt"
	"runtime"
	"runtime/trace"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A probe is a point where the running kubelet calls code of ours, so that we can see it go by.
// There are two kinds, and neither changes what the kubelet does:
//
//   - the CRI runtime service the kubelet is given (Dependencies.RemoteRuntimeService) is the
//     real gRPC client to the fake runtime, wrapped: each call of interest is noted, then passed on;
//   - the OpenTelemetry TracerProvider the kubelet is given (Dependencies.TracerProvider) notes
//     every span the kubelet starts and ends: SyncPod, SyncTerminatingPod and SyncTerminatedPod
//     each open one (pkg/kubelet/kubelet.go).
//
// A note is a runtime/trace.Log call: it lands in Go's execution trace with the goroutine
// that made it and that goroutine's stack, next to the scheduler's own events (which goroutine
// created which, which woke which). The same note is kept in memory, so that the journey can
// wait for "the container started" without reading the trace.

// Category names of the notes written into the execution trace.
const (
	categoryCRI  = "cri"
	categorySpan = "span"
)

// note is one probe hit, as kept in memory.
type note struct {
	Category string // categoryCRI or categorySpan
	Name     string // "RunPodSandbox", "syncPod", "end syncPod", ...
	UID      string // the pod's UID, when the call names a pod
	// Callers are the functions on the caller's stack, for ListPodSandbox only: the journey
	// waits for the sync loop's first housekeeping, which lists the runtime's sandboxes.
	Callers []string
	// At is when the probe fired.
	At time.Time
}

func (n note) message() string { return n.Name + " uid=" + n.UID }

// notebook keeps the notes in memory and lets the journey wait for one.
type notebook struct {
	mu      sync.Mutex
	notes   []note
	changed chan struct{}
	// sandboxes and containers map the runtime's ids back to pod UIDs.
	sandboxes, containers map[string]string
}

func newNotebook() *notebook {
	return &notebook{changed: make(chan struct{}), sandboxes: map[string]string{}, containers: map[string]string{}}
}

// add writes n into the execution trace (from the calling goroutine) and into memory.
func (b *notebook) add(n note) {
	trace.Log(context.Background(), n.Category, n.message())
	n.At = time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notes = append(b.notes, n)
	close(b.changed)
	b.changed = make(chan struct{})
}

// waitFor returns once a note satisfies match, or with ctx's error.
func (b *notebook) waitFor(ctx context.Context, what string, match func(note) bool) error {
	for {
		b.mu.Lock()
		for _, n := range b.notes {
			if match(n) {
				b.mu.Unlock()
				return nil
			}
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-changed:
		}
	}
}

// settle returns once no probe but ListPodSandbox (which PLEG and housekeeping call on their
// own, every second or two) has fired for quiet: the kubelet has finished what the last step
// set off, and its sync loop and pod workers wait again.
func (b *notebook) settle(ctx context.Context, quiet time.Duration) error {
	for {
		b.mu.Lock()
		last := time.Time{}
		for _, n := range b.notes {
			if n.Name != "ListPodSandbox" && n.At.After(last) {
				last = n.At
			}
		}
		b.mu.Unlock()
		wait := quiet - time.Since(last)
		if wait <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (b *notebook) rememberSandbox(id, uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sandboxes[id] = uid
}

func (b *notebook) rememberContainer(id, sandboxID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.containers[id] = b.sandboxes[sandboxID]
}

func (b *notebook) sandboxUID(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sandboxes[id]
}

func (b *notebook) containerUID(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.containers[id]
}

// runtimeProbe is the CRI runtime service the kubelet gets: the real client, with the calls
// that change a pod's sandbox or containers, and the reads PLEG makes, noted first.
//
// It also answers each of these calls latency late. The fake runtime answers in microseconds;
// a real one takes milliseconds (containerd's RunPodSandbox, hundreds). At the fake's speed,
// PLEG can relist a pod and the sync loop hand the pod worker its next update before the
// worker is back waiting for it, and the trace then has no wake-up to show; a few
// milliseconds per call give the kubelet the timing it has on a node.
type runtimeProbe struct {
	internalapi.RuntimeService
	book    *notebook
	latency time.Duration
}

func (r *runtimeProbe) cri(name, uid string) {
	r.book.add(note{Category: categoryCRI, Name: name, UID: uid})
}

func (r *runtimeProbe) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	uid := config.GetMetadata().GetUid()
	r.cri("RunPodSandbox", uid)
	id, err := r.RuntimeService.RunPodSandbox(ctx, config, runtimeHandler)
	if err == nil {
		r.book.rememberSandbox(id, uid)
	}
	return id, err
}

func (r *runtimeProbe) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	r.cri("StopPodSandbox", r.book.sandboxUID(podSandboxID))
	return r.RuntimeService.StopPodSandbox(ctx, podSandboxID)
}

func (r *runtimeProbe) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	r.cri("RemovePodSandbox", r.book.sandboxUID(podSandboxID))
	return r.RuntimeService.RemovePodSandbox(ctx, podSandboxID)
}

func (r *runtimeProbe) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.cri("PodSandboxStatus", r.book.sandboxUID(podSandboxID))
	return r.RuntimeService.PodSandboxStatus(ctx, podSandboxID, verbose)
}

func (r *runtimeProbe) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	r.cri("CreateContainer", sandboxConfig.GetMetadata().GetUid())
	id, err := r.RuntimeService.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	if err == nil {
		r.book.rememberContainer(id, podSandboxID)
	}
	return id, err
}

func (r *runtimeProbe) StartContainer(ctx context.Context, containerID string) error {
	r.cri("StartContainer", r.book.containerUID(containerID))
	return r.RuntimeService.StartContainer(ctx, containerID)
}

func (r *runtimeProbe) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	r.cri("StopContainer", r.book.containerUID(containerID))
	return r.RuntimeService.StopContainer(ctx, containerID, timeout)
}

func (r *runtimeProbe) RemoveContainer(ctx context.Context, containerID string) error {
	r.cri("RemoveContainer", r.book.containerUID(containerID))
	return r.RuntimeService.RemoveContainer(ctx, containerID)
}

func (r *runtimeProbe) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	r.cri("Status", "")
	return r.RuntimeService.Status(ctx, verbose)
}

func (r *runtimeProbe) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	var callers []string
	for {
		f, more := frames.Next()
		callers = append(callers, f.Function)
		if !more {
			break
		}
	}
	r.book.add(note{Category: categoryCRI, Name: "ListPodSandbox", Callers: callers})
	time.Sleep(r.latency)
	return r.RuntimeService.ListPodSandbox(ctx, filter)
}

// tracerProbe is the TracerProvider the kubelet gets: spans that record nothing (OpenTelemetry's
// noop), except that their start and end are noted, with the pod UID the kubelet attaches.
type tracerProbe struct {
	noop.TracerProvider
	book *notebook
}

func (p tracerProbe) Tracer(string, ...oteltrace.TracerOption) oteltrace.Tracer {
	return spanTracer{book: p.book}
}

type spanTracer struct {
	noop.Tracer
	book *notebook
}

// uidKey is the attribute under which the kubelet puts the pod UID on its spans (semconv's
// k8s.pod.uid).
const uidKey = attribute.Key("k8s.pod.uid")

func (t spanTracer) Start(ctx context.Context, name string, opts ...oteltrace.SpanStartOption) (context.Context, oteltrace.Span) {
	uid := ""
	config := oteltrace.NewSpanStartConfig(opts...)
	for _, kv := range config.Attributes() {
		if kv.Key == uidKey {
			uid = kv.Value.AsString()
		}
	}
	t.book.add(note{Category: categorySpan, Name: name, UID: uid})
	return ctx, &span{name: name, uid: uid, book: t.book}
}

type span struct {
	noop.Span
	name, uid string
	book      *notebook
	once      sync.Once
}

func (s *span) End(...oteltrace.SpanEndOption) {
	s.once.Do(func() { s.book.add(note{Category: categorySpan, Name: "end " + s.name, UID: s.uid}) })
}
