package podjourney

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xtrace "golang.org/x/exp/trace"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/journeynote"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// The journeys' kubelets are stopped, not gone: what their pod workers make again is removed last.
func TestMain(m *testing.M) {
	code := m.Run()
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}

// notePath is the note whose table of steps this package's live run must follow.
var notePath = repo.Path("notes", "07-syncloop.md")

// TestJourneyFollowsTheNote runs the journey against the real kubelet and checks that every
// step of the note's table happened, in the note's order, with the goroutine, the action and a
// frame the note names — in the journey as the chapter prints it, read back as the README test
// reads the chapter's output (journeynote). The note cannot drift from the code: when the
// kubelet moves, this fails.
func TestJourneyFollowsTheNote(t *testing.T) {
	tier.Long(t, "the real kubelet's journey")
	steps, err := journeynote.NoteSteps(notePath)
	require.NoError(t, err)
	_, restore, err := kubeletlog.ToFile("")
	require.NoError(t, err)
	defer restore()

	rec, err := Record(context.Background(), Options{})
	require.NoError(t, err)
	ev, err := ReadEvidence(rec.Trace)
	require.NoError(t, err)
	j, err := Build(rec, ev)
	require.NoError(t, err)
	require.NotEmpty(t, rec.UIDs[0])
	require.NotEmpty(t, rec.UIDs[1])
	assert.NotEqual(t, rec.UIDs[0], rec.UIDs[1], "an edit gives the static pod a new UID")

	var printed strings.Builder
	require.NoError(t, j.Print(&printed))
	if err := journeynote.Follows(printed.String(), steps); err != nil {
		t.Errorf("%v\nthe live journey:\n%s", err, printed.String())
	}
}

func frames(spec ...string) Stack {
	var s Stack
	for i := 0; i+1 < len(spec); i += 2 {
		line := 0
		for _, r := range spec[i+1] {
			line = line*10 + int(r-'0')
		}
		s = append(s, Frame{Func: spec[i], Line: line})
	}
	return s
}

func TestResumes(t *testing.T) {
	// The sync loop, created by the pod worker's UpdatePod call, innermost first.
	at := frames("UpdatePod", "973", "HandlePodAdditions", "2944", "syncLoopIteration", "2765", "syncLoop", "2707", "Run", "2001")
	tests := []struct {
		name    string
		blocked Stack
		want    bool
	}{
		{"waiting in the select the call came out of", frames("syncLoopIteration", "2749", "syncLoop", "2707", "Run", "2001"), true},
		{"waiting inside a helper of the handler", frames("NodeAddress", "164", "HandlePodAdditions", "2923", "syncLoopIteration", "2765", "syncLoop", "2707", "Run", "2001"), false},
		{"an outer frame at another line", frames("syncLoopIteration", "2749", "syncLoop", "2699", "Run", "2001"), false},
		{"another goroutine's function", frames("listen", "79"), false},
		{"nothing known", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, resumes(tt.blocked, at))
		})
	}
}

// TestChainAcrossANewWorker follows the causes of a new pod worker's first CRI call. Whether
// the worker blocked on its channel before UpdatePod's send is a scheduling race: the chain
// holds the creation either way, and the wake-up too when the trace has one.
func TestChainAcrossANewWorker(t *testing.T) {
	const mux, syncLoop, worker, pleg = 2, 1, 3, 4
	inSelect := frames("syncLoopIteration", "2749", "syncLoop", "2707", "Run", "2001")
	handler := frames("UpdatePod", "973", "HandlePodAdditions", "2944", "syncLoopIteration", "2765", "syncLoop", "2707", "Run", "2001")
	send := frames("UpdatePod", "996", "HandlePodAdditions", "2944", "syncLoopIteration", "2765", "syncLoop", "2707", "Run", "2001")
	inLoop := frames("podWorkerLoop", "1247", "UpdatePod.func1", "978")
	sandbox := frames("SyncPod", "2054", "podWorkerLoop.func1", "1319", "podWorkerLoop", "1328", "UpdatePod.func1", "978")

	configSent := Edge{Time: 5, From: mux, To: syncLoop, Blocked: inSelect, Reason: "select"}
	created := Edge{Time: 10, From: syncLoop, To: worker, Create: true, Stack: handler}
	woken := Edge{Time: 11, From: syncLoop, To: worker, Stack: send, Blocked: inLoop, Reason: "chan receive"}
	plegWoke := Edge{Time: 15, From: pleg, To: worker, Blocked: inLoop, Reason: "chan receive"}
	tests := []struct {
		name     string
		toWorker []Edge
		want     []Edge
	}{
		{"the send came first: nothing woke the worker", []Edge{created}, []Edge{configSent, created}},
		{"the worker waited first: its creator woke it", []Edge{created, woken}, []Edge{configSent, created, woken}},
		{"another goroutine woke it later", []Edge{created, plegWoke}, []Edge{plegWoke}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &Evidence{In: map[xtrace.GoID][]Edge{syncLoop: {configSent}, worker: tt.toWorker}}
			assert.Equal(t, tt.want, ev.Chain(worker, 20, sandbox, nil))
		})
	}
}

func TestBalanced(t *testing.T) {
	tests := []struct{ in, want string }{
		{"handler.HandlePodAdditions(ctx, u.Pods)", "handler.HandlePodAdditions(ctx, u.Pods)"},
		{"go wait.Forever(func() {", "go wait.Forever"},
		{"}, retryPeriod)", "}, retryPeriod"},
		{"select {", "select {"},
		{"kl.podWorkers.UpdatePod(ctx, UpdatePodOptions{", "kl.podWorkers.UpdatePod"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, balanced(tt.in), tt.in)
	}
}

func TestNames(t *testing.T) {
	assert.Equal(t, "kubelet.(*Kubelet).Run", shortFunc("k8s.io/kubernetes/pkg/kubelet.(*Kubelet).Run"))
	assert.Equal(t, "fsnotify.(*inotify).readEvents", shortFunc("github.com/fsnotify/fsnotify.(*inotify).readEvents"))
	assert.Equal(t, "config.newSourceFile.func1", shortFunc("k8s.io/kubernetes/pkg/kubelet/config.newSourceFile.func1"))
	assert.Equal(t, "pkg/kubelet/kubelet.go", relativeFile("/root/go/pkg/mod/k8s.io/kubernetes@v1.37.2/pkg/kubelet/kubelet.go"))
	assert.Equal(t, "pkg/kubelet/kubelet.go", relativeFile("k8s.io/kubernetes@v1.37.2/pkg/kubelet/kubelet.go"))
	assert.Equal(t, "github.com/fsnotify/fsnotify@v1.9.0/shared.go", relativeFile("/root/go/pkg/mod/github.com/fsnotify/fsnotify@v1.9.0/shared.go"))
	assert.False(t, teaching("/usr/local/go/src/runtime/chan.go"))
	assert.False(t, teaching("/root/go/pkg/mod/google.golang.org/grpc@v1.82.1/stream.go"))
	assert.True(t, teaching("/root/go/pkg/mod/k8s.io/kubernetes@v1.37.2/pkg/kubelet/kubelet.go"))
}

// TestSelectCase reads the pinned kubelet source: which case of syncLoopIteration's select
// (and of the switch inside it) holds a line.
func TestSelectCase(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	require.NoError(t, err)
	file := filepath.Join(strings.TrimSpace(string(out)), "pkg/kubelet/kubelet.go")
	tests := []struct {
		line int
		want string
	}{
		{2765, "case u, open := <-configCh → case kubetypes.ADD"},
		{2771, "case u, open := <-configCh → case kubetypes.REMOVE"},
		{2789, "case e := <-plegCh"},
		{2749, ""}, // the select itself
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, selectCase(Frame{Abs: file, Line: tt.line}), "line %d", tt.line)
	}
	assert.Equal(t, "", selectCase(Frame{Abs: filepath.Join(t.TempDir(), "gone.go"), Line: 1}), "no source, no case")
}
