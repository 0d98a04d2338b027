package podjourney

import (
	"fmt"
	"io"
	"slices"
	"strings"

	xtrace "golang.org/x/exp/trace"
)

// Entry is one step of the journey as printed: a goroutine creating or waking another, or a
// goroutine reaching a probe (a CRI call, a span the kubelet opens).
type Entry struct {
	Phase string
	// Actor is the goroutine that acts, named by the outermost kubelet function it runs.
	Actor string
	// Verb is "wakes", "creates", "calls" (a CRI method), "runs" (a span: SyncPod, ...) or
	// "returns" (the goroutine ended).
	Verb string
	// Object is the goroutine woken or created, the CRI method, or the span.
	Object string
	// Waiting is where the woken goroutine was blocked, and why.
	Waiting *Frame
	Reason  string
	// Case is the select case (and switch case) of the stack's syncLoopIteration frame, read
	// from the kubelet's source: which channel the sync loop took.
	Case string
	// Stack is the actor's stack at that moment, innermost first, kubelet frames only.
	Stack Stack
}

// Journey is the story of one recording.
type Journey struct {
	Recording *Recording
	Entries   []Entry
}

// builder collects entries, phase by phase.
type builder struct {
	ev      *Evidence
	phase   string
	entries []Entry
}

func (b *builder) edge(e Edge) {
	entry := Entry{Phase: b.phase, Actor: b.ev.Name(e.From), Verb: "wakes", Object: b.ev.Name(e.To), Stack: e.Stack, Reason: e.Reason}
	if e.Create {
		entry.Verb = "creates"
	} else if len(e.Blocked) > 0 {
		entry.Waiting = &e.Blocked[0]
	}
	b.add(entry)
}

func (b *builder) edges(chain []Edge) {
	for _, e := range chain {
		b.edge(e)
	}
}

func (b *builder) hit(h Hit) {
	verb := "calls"
	if h.Category == categorySpan {
		verb = "runs"
	}
	b.add(Entry{Phase: b.phase, Actor: b.ev.Name(h.G), Verb: verb, Object: h.Name, Stack: h.Stack})
}

func (b *builder) add(e Entry) {
	for _, f := range e.Stack {
		if strings.HasSuffix(f.Func, ".syncLoopIteration") {
			e.Case = selectCase(f)
		}
	}
	b.entries = append(b.entries, e)
}

// find is Evidence.Find, failing with what was looked for.
func (b *builder) find(after xtrace.Time, name, uid string) (Hit, error) {
	h, ok := b.ev.Find(after, name, uid)
	if !ok {
		return Hit{}, fmt.Errorf("%s: the trace has no %s for pod UID %s", b.phase, name, uid)
	}
	return h, nil
}

// calls adds the probes pod uid hit from goroutine worker, or from goroutines worker created,
// between from and the end of the span that opened at from. It returns when that span ended.
func (b *builder) calls(worker xtrace.GoID, opened Hit, uid string) xtrace.Time {
	b.hit(opened)
	for _, h := range b.ev.Hits {
		if h.Time <= opened.Time || h.UID != uid {
			continue
		}
		if h.G == worker && h.Name == "end "+opened.Name {
			return h.Time
		}
		if h.Category != categoryCRI {
			continue
		}
		if h.G != worker {
			// a helper goroutine: show that the worker created it.
			e, ok := b.ev.Cause(h.G, h.Time, h.Stack)
			if !ok || e.From != worker || !e.Create {
				continue
			}
			b.edge(e)
		}
		b.hit(h)
	}
	return opened.Time
}

// woken adds the wake-ups goroutine g caused between from and to: whom it woke, and where.
func (b *builder) woken(g xtrace.GoID, from, to xtrace.Time) {
	var out []Edge
	for _, in := range b.ev.In {
		for _, e := range in {
			if e.From == g && !e.Create && !e.Opaque && e.Time > from && e.Time < to && !b.ev.Ours[e.To] && !strings.HasPrefix(b.ev.Name(e.To), "goroutine ") {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b Edge) int { return int(a.Time - b.Time) })
	b.edges(out)
}

// created adds the goroutines g created between from and to that run kubelet code (a
// goroutine of the Go library alone, as net.LookupIP starts, has no name to show).
func (b *builder) created(g xtrace.GoID, from, to xtrace.Time) {
	var out []Edge
	for _, in := range b.ev.In {
		for _, e := range in {
			if e.From == g && e.Create && e.Time > from && e.Time < to && !strings.HasPrefix(b.ev.Name(e.To), "goroutine ") {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b Edge) int { return int(a.Time - b.Time) })
	b.edges(out)
}

// lastWake is the latest wake-up of g in (from, to), by any kubelet goroutine.
func (b *builder) lastWake(g xtrace.GoID, from, to xtrace.Time) (Edge, bool) {
	in := b.ev.In[g]
	for i := len(in) - 1; i >= 0; i-- {
		if e := in[i]; !e.Create && !e.Opaque && e.Time > from && e.Time < to {
			return e, true
		}
	}
	return Edge{}, false
}

// Build tells the journey from the evidence.
func Build(rec *Recording, ev *Evidence) (*Journey, error) {
	b := &builder{ev: ev}
	uid, newUID := rec.UIDs[0], rec.UIDs[1]
	if err := b.startPhase(); err != nil {
		return nil, err
	}
	worker, err := b.addPhase(uid)
	if err != nil {
		return nil, err
	}
	newWorker, err := b.editPhase(rec, worker, uid, newUID)
	if err != nil {
		return nil, err
	}
	if err := b.deletePhase(rec, newWorker, newUID); err != nil {
		return nil, err
	}
	return &Journey{Recording: rec, Entries: b.entries}, nil
}

// isWorker matches one goroutine.
func isWorker(worker xtrace.GoID) func(xtrace.GoID) bool {
	return func(g xtrace.GoID) bool { return g == worker }
}

func (b *builder) startPhase() error {
	ev := b.ev
	// start: the first runtime status check outside NewMainKubelet, on the goroutine Run starts
	// for updateRuntimeUp, and the goroutines that goroutine starts next, before any pod.
	b.phase = PhaseStart
	var status Hit
	for _, h := range ev.Hits {
		if h.Name == "Status" && !ev.Ours[h.G] {
			status = h
			break
		}
	}
	if status.G == 0 {
		return fmt.Errorf("start: the trace has no runtime status check by the kubelet")
	}
	b.edges(ev.Chain(status.G, status.Time, status.Stack, func(g xtrace.GoID) bool { return ev.Ours[g] }))
	b.hit(status)
	b.created(status.G, status.Time, ev.Marks[PhaseAdd])

	return nil
}

func (b *builder) addPhase(uid string) (xtrace.GoID, error) {
	ev := b.ev
	// add: from the inotify event to the pod worker's first CRI call, then PLEG's relist and
	// the second SyncPod it causes, which reports the pod Running to the status manager.
	b.phase = PhaseAdd
	sandbox, err := b.find(ev.Marks[PhaseAdd], "RunPodSandbox", uid)
	if err != nil {
		return 0, err
	}
	worker := sandbox.G
	b.edges(ev.Chain(worker, sandbox.Time, sandbox.Stack, nil))
	first, err := b.find(ev.Marks[PhaseAdd], "syncPod", uid)
	if err != nil {
		return 0, err
	}
	firstEnd := b.calls(worker, first, uid)
	second, err := b.find(firstEnd, "syncPod", uid)
	if err != nil {
		return 0, err
	}
	b.edges(ev.Chain(worker, second.Time, second.Stack, isWorker(worker)))
	b.hit(second)
	secondEnd, err := b.find(second.Time, "end syncPod", uid)
	if err != nil {
		return 0, err
	}
	b.woken(worker, second.Time, secondEnd.Time)

	return worker, nil
}

func (b *builder) editPhase(rec *Recording, worker xtrace.GoID, uid, newUID string) (xtrace.GoID, error) {
	ev := b.ev
	// edit: the new UID makes the merge send REMOVE for the old pod and ADD for the new one.
	b.phase = PhaseEdit
	terminating, err := b.find(ev.Marks[PhaseEdit], "syncTerminatingPod", uid)
	if err != nil {
		return 0, err
	}
	b.edges(ev.Chain(worker, terminating.Time, terminating.Stack, nil))
	terminatingEnd := b.calls(worker, terminating, uid)
	var newWorker xtrace.GoID
	for _, in := range ev.In {
		for _, e := range in {
			if e.Create && e.Time > ev.Marks[PhaseEdit] && ev.Name(e.To) == ev.Name(worker) && (newWorker == 0 || e.Time < ev.In[newWorker][0].Time) {
				newWorker = e.To
			}
		}
	}
	if newWorker == 0 {
		return 0, fmt.Errorf("edit: the trace shows no pod worker created for the new version")
	}
	b.edge(ev.In[newWorker][0])
	terminated, err := b.find(terminating.Time, "syncTerminatedPod", uid)
	if err != nil {
		return 0, err
	}
	if e, ok := b.lastWake(worker, terminatingEnd, terminated.Time); ok {
		b.edge(e)
	}
	b.hit(terminated)
	if _, ok := ev.Ended[worker]; ok {
		b.add(Entry{Phase: b.phase, Actor: ev.Name(worker), Verb: "returns"})
	}
	if rec.WaitedForRestart {
		started, err := b.find(terminated.Time, "syncPod", newUID)
		if err != nil {
			return 0, err
		}
		b.edges(ev.Chain(newWorker, started.Time, started.Stack, isWorker(worker)))
		b.calls(newWorker, started, newUID)
	}

	return newWorker, nil
}

func (b *builder) deletePhase(rec *Recording, newWorker xtrace.GoID, newUID string) error {
	ev := b.ev
	// delete: REMOVE for the pod; a started pod is terminated, a waiting one just stops.
	b.phase = PhaseDelete
	if rec.WaitedForRestart {
		terminating, err := b.find(ev.Marks[PhaseDelete], "syncTerminatingPod", newUID)
		if err != nil {
			return err
		}
		b.edges(ev.Chain(newWorker, terminating.Time, terminating.Stack, nil))
		end := b.calls(newWorker, terminating, newUID)
		terminated, err := b.find(terminating.Time, "syncTerminatedPod", newUID)
		if err != nil {
			return err
		}
		if e, ok := b.lastWake(newWorker, end, terminated.Time); ok {
			b.edge(e)
		}
		b.hit(terminated)
	} else {
		end, ok := ev.Ended[newWorker]
		if !ok {
			return fmt.Errorf("delete: the new version's pod worker did not return")
		}
		e, ok := b.lastWake(newWorker, ev.Marks[PhaseDelete], end)
		if !ok {
			return fmt.Errorf("delete: nothing woke the new version's pod worker")
		}
		b.edges(ev.Chain(e.From, e.Time, e.Stack, nil))
		b.edge(e)
	}
	if _, ok := ev.Ended[newWorker]; ok {
		b.add(Entry{Phase: b.phase, Actor: ev.Name(newWorker), Verb: "returns"})
	}
	return nil
}

// phaseTitles say what was done to the static pod directory.
var phaseTitles = map[string]string{
	PhaseStart:  "start: before any pod, the runtime is checked and the runtime-dependent modules start",
	PhaseAdd:    "add: web.yaml appears in the static pod directory",
	PhaseEdit:   "edit: web.yaml is replaced by a version with another label",
	PhaseDelete: "delete: web.yaml is removed",
}

// Print writes the journey: each step numbered, each stack printed once (a stack seen before
// is referred to by its step number).
func (j *Journey) Print(w io.Writer) error {
	p := &printer{w: w}
	seen := map[string]int{}
	phase := ""
	for i, e := range j.Entries {
		if e.Phase != phase {
			phase = e.Phase
			p.printf("\n== %s ==\n", phaseTitles[phase])
			switch phase {
			case PhaseAdd:
				p.printf("   pod %s, UID %s\n", j.Recording.Pod, j.Recording.UIDs[0])
			case PhaseEdit:
				p.printf("   the new version has UID %s\n", j.Recording.UIDs[1])
			}
		}
		p.printf("\n%3d  %s %s", i+1, e.Actor, e.Verb)
		if e.Object != "" {
			p.printf(" %s", e.Object)
		}
		if e.Waiting != nil {
			p.printf(", which waited [%s] in %s", e.Reason, e.Waiting.Func)
		}
		p.printf("\n")
		if e.Waiting != nil {
			p.printf("       at %s\n", e.Waiting)
		}
		if e.Case != "" {
			p.printf("       the sync loop took: %s\n", e.Case)
		}
		if len(e.Stack) == 0 {
			continue
		}
		key := fmt.Sprint(e.Stack)
		if n, ok := seen[key]; ok {
			p.printf("       (the same stack as step %d)\n", n)
			continue
		}
		seen[key] = i + 1
		width := 0
		for _, f := range e.Stack {
			width = max(width, len(f.Func))
		}
		for _, f := range e.Stack {
			p.printf("       %-*s  %s\n", width, f.Func, f)
		}
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
