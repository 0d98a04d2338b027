package podjourney

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	xtrace "golang.org/x/exp/trace"
)

// This file reads the execution trace back: which goroutine created which, which woke which
// (and where each was blocked), and where the probes fired. It is the evidence the journey
// prints; nothing here knows the kubelet's functions by name.

// Frame is one frame of a stack, as printed: the function, and its file relative to the
// module it belongs to (pkg/kubelet/kubelet.go for k8s.io/kubernetes).
type Frame struct {
	Func string // "kubelet.(*Kubelet).syncLoopIteration"
	File string // "pkg/kubelet/kubelet.go"
	Line int
	// Abs is the file's path as the binary recorded it, to read the source when it is there.
	Abs string
}

// String is the frame's place, path#Lline, followed by the code on that line in parentheses
// when the source is at hand: the form of a citation, which the walkthrough's citation
// checker verifies wherever it is printed in a README.
func (f Frame) String() string {
	s := fmt.Sprintf("%s#L%d", f.File, f.Line)
	if text := sourceText(f); text != "" {
		s += " (" + text + ")"
	}
	return s
}

// Stack holds frames innermost first, as Go prints them; only frames that teach are kept.
type Stack []Frame

// kubernetesModule is how a kubernetes source path starts in a module-mode build.
const kubernetesModule = "k8s.io/kubernetes@"

// teaching says whether a frame belongs in the story: the kubelet's own code (the
// k8s.io/kubernetes module) and the inotify library its file source uses. The Go runtime,
// gRPC, client-go's helpers and this program's probes are left out.
func teaching(file string) bool {
	return strings.Contains(file, kubernetesModule) || strings.Contains(file, "github.com/fsnotify/fsnotify@")
}

// stackOf keeps the teaching frames of a trace stack.
func stackOf(s xtrace.Stack) Stack {
	var out Stack
	for f := range s.Frames() {
		if !teaching(f.File) {
			continue
		}
		out = append(out, Frame{Func: shortFunc(f.Func), File: relativeFile(f.File), Line: int(f.Line), Abs: f.File})
	}
	return out
}

// shortFunc drops the import path: k8s.io/kubernetes/pkg/kubelet.(*Kubelet).Run → kubelet.(*Kubelet).Run.
func shortFunc(fn string) string {
	search := fn
	if i := strings.Index(search, "["); i >= 0 { // generic instantiations may hold paths
		search = search[:i]
	}
	return fn[strings.LastIndex(search, "/")+1:]
}

// relativeFile makes a module file path relative to its module: .../k8s.io/kubernetes@v1.37.2/pkg/x.go → pkg/x.go.
// Other modules keep module@version: github.com/fsnotify/fsnotify@v1.9.0/shared.go.
func relativeFile(file string) string {
	if i := strings.Index(file, kubernetesModule); i >= 0 {
		rest := file[i+len(kubernetesModule):]
		if j := strings.Index(rest, "/"); j >= 0 {
			return rest[j+1:]
		}
	}
	if i := strings.Index(file, "github.com/"); i >= 0 {
		return file[i:]
	}
	return file
}

// Outermost is the stack's outermost teaching frame: the function a goroutine was started in,
// as far as the kubelet's code goes. Goroutines are named by it.
func (s Stack) Outermost() string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1].Func
}

// Has says whether the stack passes through fn.
func (s Stack) Has(fn string) bool {
	return slices.ContainsFunc(s, func(f Frame) bool { return f.Func == fn })
}

// Edge is one goroutine making another runnable: creating it, or waking it from a block.
type Edge struct {
	Time   xtrace.Time
	From   xtrace.GoID
	To     xtrace.GoID
	Create bool
	// Stack is the creator's or waker's stack at that moment.
	Stack Stack
	// Blocked is where the woken goroutine was waiting (for a wake), or where it starts (for
	// a creation); Reason is why it was waiting ("chan receive", "select", "sync", ...).
	Blocked Stack
	Reason  string
	// Opaque marks a wake-up from outside the kubelet's code: a timer, the network poller, or
	// a goroutine running no kubelet code (gRPC's transport). It ends a chain: the story of
	// why this goroutine ran starts there.
	Opaque bool
}

// Hit is one probe firing: a CRI call or a span the kubelet opened or closed.
type Hit struct {
	Time     xtrace.Time
	G        xtrace.GoID
	Category string
	Name     string
	UID      string
	Stack    Stack
}

// Evidence is what the trace holds about the kubelet's goroutines.
type Evidence struct {
	// In lists, per goroutine, the edges that made it runnable, in time order: creations by
	// kubelet code, and wake-ups from a channel operation or a condition variable (opaque when
	// the waker was not kubelet code).
	In map[xtrace.GoID][]Edge
	// Ended is when each goroutine that returned did so.
	Ended map[xtrace.GoID]xtrace.Time
	// Hits are the probes that fired, in time order.
	Hits []Hit
	// Marks are the moments the journey did its file operations, by phase.
	Marks map[string]xtrace.Time
	// Ours are the goroutines of this program that ran the journey (they wrote its marks).
	Ours map[xtrace.GoID]bool
	// names holds each goroutine's name as seen on its own stacks while it ran; startNames
	// the name of the function it was started with (often a wrapper: app.startKubelet.gowrap1).
	names, startNames map[xtrace.GoID]string
}

// waitReasons are the blocks a wake-up is followed through: channel operations and condition
// variables, how the kubelet's goroutines hand each other work. Sleeps, the network and the
// garbage collector are not causes inside the kubelet; neither is a mutex ("sync"): the
// goroutine that unlocks it did not ask for anything, it only was in the way (klog's own lock,
// for one, when two goroutines log at once).
var waitReasons = map[string]bool{"chan receive": true, "chan send": true, "select": true, "sync.(*Cond).Wait": true}

// ReadEvidence reads an execution trace.
func ReadEvidence(data []byte) (*Evidence, error) {
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read the execution trace: %w", err)
	}
	ev := &Evidence{
		In: map[xtrace.GoID][]Edge{}, Ended: map[xtrace.GoID]xtrace.Time{}, Marks: map[string]xtrace.Time{},
		Ours: map[xtrace.GoID]bool{}, names: map[xtrace.GoID]string{}, startNames: map[xtrace.GoID]string{},
	}
	type block struct {
		stack  Stack
		reason string
	}
	blocked := map[xtrace.GoID]block{}
	for {
		e, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the execution trace: %w", err)
		}
		switch e.Kind() {
		case xtrace.EventLog:
			l := e.Log()
			if l.Category == categoryJourney {
				ev.Marks[l.Message] = e.Time()
				ev.Ours[e.Goroutine()] = true
				continue
			}
			if l.Category != categoryCRI && l.Category != categorySpan {
				continue
			}
			name, uid, _ := strings.Cut(l.Message, " uid=")
			h := Hit{Time: e.Time(), G: e.Goroutine(), Category: l.Category, Name: name, UID: uid, Stack: stackOf(e.Stack())}
			ev.Hits = append(ev.Hits, h)
			ev.name(h.G, h.Stack)
		case xtrace.EventStateTransition:
			st := e.StateTransition()
			if st.Resource.Kind != xtrace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			from, to := st.Goroutine()
			switch {
			case from == xtrace.GoRunning && to == xtrace.GoWaiting:
				s := stackOf(st.Stack)
				blocked[g] = block{stack: s, reason: st.Reason}
				ev.name(g, s)
			case from == xtrace.GoNotExist && to == xtrace.GoRunnable:
				by := stackOf(e.Stack())
				start := stackOf(st.Stack)
				if len(start) > 0 {
					ev.startNames[g] = start.Outermost()
				}
				ev.name(e.Goroutine(), by)
				if e.Goroutine() != xtrace.NoGoroutine && len(by) > 0 {
					ev.In[g] = append(ev.In[g], Edge{Time: e.Time(), From: e.Goroutine(), To: g, Create: true, Stack: by, Blocked: start})
				}
			case from == xtrace.GoWaiting && to == xtrace.GoRunnable:
				by := stackOf(e.Stack())
				b := blocked[g]
				delete(blocked, g)
				ev.name(e.Goroutine(), by)
				if waitReasons[b.reason] {
					opaque := e.Goroutine() == xtrace.NoGoroutine || len(by) == 0
					ev.In[g] = append(ev.In[g], Edge{Time: e.Time(), From: e.Goroutine(), To: g, Stack: by, Blocked: b.stack, Reason: b.reason, Opaque: opaque})
				}
			case to == xtrace.GoNotExist:
				ev.Ended[g] = e.Time()
			}
		}
	}
	return ev, nil
}

// name remembers a goroutine's name from the first teaching stack seen for it.
func (ev *Evidence) name(g xtrace.GoID, s Stack) {
	if _, ok := ev.names[g]; !ok && len(s) > 0 && g != xtrace.NoGoroutine {
		ev.names[g] = s.Outermost()
	}
}

// Name is the goroutine's name: the outermost kubelet function it runs.
func (ev *Evidence) Name(g xtrace.GoID) string {
	if ev.Ours[g] {
		return "this program's goroutine"
	}
	if n, ok := ev.names[g]; ok {
		return n
	}
	if n, ok := ev.startNames[g]; ok {
		return n
	}
	return fmt.Sprintf("goroutine %d", g)
}

// resumes says whether a wake-up resumed the code path that led to at: the woken goroutine
// was blocked in a frame that is an ancestor of at's innermost frames. All outer frames must
// be the same call sites; the frame that blocked must be the same function (at a different
// line: the goroutine went on from its wait to the call that led to at). A wake inside some
// nested call (a helper waiting for a lock, a lookup waiting for an answer) is not the cause.
func resumes(blocked, at Stack) bool {
	n := len(blocked)
	if n == 0 || n > len(at) {
		return false
	}
	// Both stacks are innermost first; compare from the outermost frame.
	for i := 1; i <= n; i++ {
		b, a := blocked[n-i], at[len(at)-i]
		if b.Func != a.Func {
			return false
		}
		if i < n && b.Line != a.Line {
			return false
		}
	}
	return true
}

// Cause finds what made goroutine g do what it did at time t with stack at: the latest edge
// into g before t that was g's creation, or a wake-up that resumed the path to at. A wake-up
// from outside the kubelet (a ticker firing the sync loop's select) is a cause too, one the
// trace cannot follow further: then there is none to return.
func (ev *Evidence) Cause(g xtrace.GoID, t xtrace.Time, at Stack) (Edge, bool) {
	in := ev.In[g]
	for i := len(in) - 1; i >= 0; i-- {
		e := in[i]
		if e.Time >= t {
			continue
		}
		if e.Create || resumes(e.Blocked, at) {
			return e, !e.Opaque
		}
	}
	return Edge{}, false
}

// Chain walks causes back from (g, t, at): what woke g, what woke the goroutine that woke g,
// and so on, until a goroutine was woken by nothing in the kubelet (the inotify descriptor, a
// timer), or a goroutine in stop is reached. The chain comes back in causal order.
func (ev *Evidence) Chain(g xtrace.GoID, t xtrace.Time, at Stack, stop func(xtrace.GoID) bool) []Edge {
	var chain []Edge
	seen := map[xtrace.GoID]bool{g: true}
	for range 12 {
		e, ok := ev.Cause(g, t, at)
		if !ok {
			break
		}
		if stop != nil && stop(e.From) {
			chain = append(chain, e)
			break
		}
		if seen[e.From] {
			// a goroutine of the chain again: a receiver that woke the sender it was
			// waiting for. The story starts at the send.
			break
		}
		chain = append(chain, e)
		if c, ok := ev.createdJustBefore(g, e); ok {
			// The goroutine that woke g had just created it: one hand-off in two steps (a new
			// pod worker that reached its receive before UpdatePod's send, a race the trace
			// records either way). Both are told, the creation first.
			chain = append(chain, c)
			e = c
		}
		seen[e.From] = true
		g, t, at = e.From, e.Time, e.Stack
	}
	slices.Reverse(chain)
	return chain
}

// createdJustBefore returns the creation of g when wake, a wake-up of g, came from the
// goroutine that created it with nothing else making g runnable in between.
func (ev *Evidence) createdJustBefore(g xtrace.GoID, wake Edge) (Edge, bool) {
	if wake.Create {
		return Edge{}, false
	}
	in := ev.In[g]
	for i := len(in) - 1; i > 0; i-- {
		if in[i].Time == wake.Time && in[i].From == wake.From {
			if prev := in[i-1]; prev.Create && prev.From == wake.From {
				return prev, true
			}
			return Edge{}, false
		}
	}
	return Edge{}, false
}

// Find returns the first hit after t matching name and uid (uid "" matches any).
func (ev *Evidence) Find(after xtrace.Time, name, uid string) (Hit, bool) {
	for _, h := range ev.Hits {
		if h.Time > after && h.Name == name && (uid == "" || h.UID == uid) {
			return h, true
		}
	}
	return Hit{}, false
}
