package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/07-syncloop/gosource"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/13-debugger/headless"
)

// Exercise 16: chapter 13's Delve on chapter 07's sync loop — which goroutine starts a static
// pod's worker, and what woke it. The checker asks the running kubelet, through Delve, what the
// attendee asked it: it builds chapter 04's program (the real kubelet, in-process), runs it under
// a headless Delve on the exercise's one static pod, stops where the attendee stopped, and compares
// the answers with what it sees there. Nothing it compares with is written in this file.

const (
	workerExercise = "examples/workshop/16-worker-in-delve"
	workerPods     = workerExercise + "/static-pods"
	workerProgram  = "./chapters/04-runkubelet"
	// Where the attendee stops: the pod workers' entry, and the worker goroutine's loop.
	updatePodFunc  = "k8s.io/kubernetes/pkg/kubelet.(*podWorkers).UpdatePod"
	workerLoopFunc = "k8s.io/kubernetes/pkg/kubelet.(*podWorkers).podWorkerLoop"
)

// location is a place in the source: a go statement, a frame.
type location struct {
	function, file string
	line           int
}

// at is "file.go:42", as an attendee may write it (a full path ends with it too).
func (l location) at() string { return fmt.Sprintf("%s:%d", filepath.Base(l.file), l.line) }

// name is the function's own name, without its package and receiver: "UpdatePod".
func (l location) name() string { return l.function[strings.LastIndex(l.function, ".")+1:] }

// workerEvidence is what the running kubelet showed in Delve.
type workerEvidence struct {
	goStatement location // the worker goroutine's go statement ("Go:" of `goroutine` in podWorkerLoop)
	creator     location // the go statement that started the goroutine stopped in UpdatePod
	creatorID   int64    // that goroutine
	parentID    int64    // the goroutine that started the worker (runtime.curg.parentGoid)
	handler     location // UpdatePod's caller
	loop        location // the sync loop's frame, in syncLoopIteration
	selectCase  string   // the select case (→ switch case) that frame is in
	op, source  string   // u.Op and u.Source there
}

// caseChannel reads the channel of a select case: "configCh" in "case u, open := <-configCh → …".
var caseChannel = regexp.MustCompile(`^case [^→]*<-\s*([\w.]+)`)

// workerAnswers are exercise 16's answers.
type workerAnswers struct {
	GoStatement string `json:"goStatement"`
	Creator     string `json:"creator"`
	Channel     string `json:"channel"`
	Op          string `json:"op"`
	Source      string `json:"source"`
	Handler     string `json:"handler"`
}

// 16. With breakpoints, the static pod's worker: the go statement that starts it, the goroutine
// that runs that statement (where that one was started), and what woke it to — the select case,
// the update's operation and source, the handler.
func checkWorkerInDelve(ctx context.Context, env Env) (Result, error) {
	var r Result
	var a workerAnswers
	const file = "16-worker-in-delve.yaml"
	if !answers(env, &r, file, &a) ||
		unfilled(&r, env, file, map[string]bool{"goStatement": a.GoStatement != "", "creator": a.Creator != "",
			"channel": a.Channel != "", "op": a.Op != "", "source": a.Source != "", "handler": a.Handler != ""}) {
		return r, nil
	}
	ev, err := askTheKubelet(ctx, env.Root)
	if err != nil {
		return r, err
	}
	return ev.judge(a)
}

// judge compares the answers with what the kubelet showed.
func (ev workerEvidence) judge(a workerAnswers) (Result, error) {
	var r Result
	if !strings.Contains(a.GoStatement, ev.goStatement.at()) || !strings.Contains(a.GoStatement, ev.goStatement.name()) {
		r.missing("goStatement: the function and file:line of the go statement that started the worker goroutine — `goroutine` at the worker's breakpoint (podWorkerLoop), its \"Go:\" line")
	}
	if !strings.Contains(a.Creator, ev.creator.at()) {
		r.missing("creator: where the goroutine that ran that go statement was started itself (file:line) — `goroutine` at the UpdatePod breakpoint, its \"Go:\" line; `print runtime.curg.parentGoid` in the worker names the goroutine")
	}
	m := caseChannel.FindStringSubmatch(ev.selectCase)
	if m == nil {
		return r, fmt.Errorf("the sync loop stopped at %s:%d, in no select case that receives (%q)", ev.loop.file, ev.loop.line, ev.selectCase)
	}
	if normalize(a.Channel) != m[1] && !strings.Contains(a.Channel, "<-"+m[1]) {
		r.missing("channel: the channel the sync loop's select received from — the case holding line %d of %s (`frame 2 list`, or the source)", ev.loop.line, filepath.Base(ev.loop.file))
	}
	if lastWord(ev.op) != lastWord(normalize(a.Op)) {
		r.missing("op: the update's operation, as `frame 2 print u.Op` prints it")
	}
	if normalize(a.Source) != strings.Trim(ev.source, `"`) {
		r.missing("source: the config source the update came from, as `frame 2 print u.Source` prints it")
	}
	if !strings.Contains(a.Handler, ev.handler.name()) {
		r.missing("handler: the function of the sync loop that called UpdatePod — frame 1 of `stack` at the UpdatePod breakpoint")
	}
	return r, nil
}

// askTheKubelet builds chapter 04's program and Delve (or takes .bin/dlv, which make dlv builds),
// runs the program under a headless Delve on the exercise's static pod, and stops as the attendee
// did: in UpdatePod (its caller's stack, the update), then in the worker's podWorkerLoop (its go
// statement, the goroutine that ran it). Then it lets the program end (--once: it removes what it
// made) and ends Delve.
func askTheKubelet(ctx context.Context, root string) (workerEvidence, error) {
	var ev workerEvidence
	if runtime.GOOS != "linux" {
		return ev, fmt.Errorf("exercise 16 runs the real kubelet, which chapter 04 runs on Linux only")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "exercise-16-")
	if err != nil {
		return ev, err
	}
	defer os.RemoveAll(dir)
	dlv := filepath.Join(root, ".bin", "dlv")
	if st, err := os.Stat(dlv); err != nil || st.Mode()&0o111 == 0 {
		dlv = filepath.Join(dir, "dlv")
		if err := headless.Build(ctx, root, dlv); err != nil {
			return ev, err
		}
	}
	binary := filepath.Join(dir, "kubelet")
	if err := goBuild(ctx, root, binary, workerProgram); err != nil {
		return ev, err
	}

	// Delve serves on a unix socket in a directory only this user can open (it asks no
	// credentials); the program's temporary files go there too (TMPDIR).
	session, err := headless.Start(ctx, headless.Program{Dlv: dlv, Dir: dir, Env: append(os.Environ(), "TMPDIR="+dir),
		Args: []string{binary, "--static-pod-path", filepath.Join(root, filepath.FromSlash(workerPods)), "--once"}})
	if err != nil {
		return ev, err
	}
	defer session.Stop()
	if err := session.Drive(ctx, func(client *rpc2.RPCClient) error { return ask(client, &ev) }); err != nil {
		return ev, fmt.Errorf("exercise 16's kubelet in Delve: %w\n%s", err, session.Tail())
	}
	return ev, nil
}

// ask sets the two breakpoints and reads what the kubelet shows at each; then it clears them and
// lets the program run to its end.
func ask(client *rpc2.RPCClient, ev *workerEvidence) error {
	update, err := client.CreateBreakpoint(&api.Breakpoint{FunctionName: updatePodFunc})
	if err != nil {
		return fmt.Errorf("break %s: %w", updatePodFunc, err)
	}
	worker, err := client.CreateBreakpoint(&api.Breakpoint{FunctionName: workerLoopFunc})
	if err != nil {
		return fmt.Errorf("break %s: %w", workerLoopFunc, err)
	}
	load := api.LoadConfig{MaxStringLen: 64, MaxStructFields: -1}

	// First stop: the sync loop's goroutine, calling UpdatePod for the new pod.
	stop, err := headless.ContinueTo(client, updatePodFunc)
	if err != nil {
		return err
	}
	g := stop.SelectedGoroutine
	ev.creator, ev.creatorID = fromLocation(g.GoStatementLoc), g.ID
	frames, err := client.Stacktrace(g.ID, 3, 0, 0, &load)
	if err != nil || len(frames) < 3 {
		return fmt.Errorf("the stack of goroutine %d: %d frames, %v", g.ID, len(frames), err)
	}
	ev.handler, ev.loop = fromFrame(frames[1]), fromFrame(frames[2])
	ev.selectCase = gosource.SelectCase(ev.loop.file, ev.loop.line)
	for expr, into := range map[string]*string{"u.Op": &ev.op, "u.Source": &ev.source} {
		v, err := client.EvalVariable(api.EvalScope{GoroutineID: g.ID, Frame: 2}, expr, load)
		if err != nil {
			return fmt.Errorf("print %s in %s: %w", expr, ev.loop.function, err)
		}
		*into = v.SinglelineString()
	}
	if _, err := client.ClearBreakpoint(update.ID); err != nil {
		return err
	}

	// Second stop: the worker goroutine, at the top of its loop.
	stop, err = headless.ContinueTo(client, workerLoopFunc)
	if err != nil {
		return err
	}
	w := stop.SelectedGoroutine
	ev.goStatement = fromLocation(w.GoStatementLoc)
	parent, err := client.EvalVariable(api.EvalScope{GoroutineID: w.ID}, "runtime.curg.parentGoid", load)
	if err != nil {
		return fmt.Errorf("print runtime.curg.parentGoid: %w", err)
	}
	if ev.parentID, err = strconv.ParseInt(parent.Value, 10, 64); err != nil {
		return fmt.Errorf("runtime.curg.parentGoid is %q: %w", parent.Value, err)
	}
	if ev.parentID != ev.creatorID {
		return fmt.Errorf("the worker (goroutine %d) was started by goroutine %d, not by goroutine %d, stopped in UpdatePod before it", w.ID, ev.parentID, ev.creatorID)
	}
	if _, err := client.ClearBreakpoint(worker.ID); err != nil {
		return err
	}
	// --once: the program waits for the pod to run, prints it, stops the kubelet and removes
	// its directories.
	if state := <-client.Continue(); state == nil || !state.Exited || state.ExitStatus != 0 { // Err says "Process … has exited"
		return fmt.Errorf("the program did not end by itself: %s", headless.Describe(state))
	}
	return nil
}

func fromLocation(l api.Location) location {
	loc := location{file: l.File, line: l.Line}
	if l.Function != nil {
		loc.function = l.Function.Name()
	}
	return loc
}

func fromFrame(f api.Stackframe) location { return fromLocation(f.Location) }

// goBuild builds a package into out, in dir.
func goBuild(ctx context.Context, dir, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if output, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil { // stopped (Ctrl-C), not failed
			return fmt.Errorf("go build %s: %w", pkg, ctx.Err())
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, output)
		}
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

// lastWord is an operation's name, as Delve prints it ("ADD (0)") or as Go names it
// ("kubetypes.ADD"): "ADD".
func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0][strings.LastIndex(f[0], ".")+1:]
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
