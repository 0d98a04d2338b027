package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

func TestMain(m *testing.M) {
	if args := os.Getenv("CHAPTER_ARGS"); args != "" { // the chapter, as a reader runs it
		os.Args = append([]string{"07-syncloop"}, strings.Fields(args)...)
		main()
	}
	code := m.Run()
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}

// Every flag is checked before the kubelet starts: the run takes a minute, and a trace file that
// exists (the reader's) or cannot be made would otherwise be found at its end.
func TestValidate(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	existing := filepath.Join(dir, "existing")
	require.NoError(t, os.WriteFile(existing, []byte("the reader's\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink(dir, filepath.Join(dir, "link")))
	good := syncLoopOptions{nodeName: "walkthrough", timeout: 30 * time.Second}
	tests := []validtable.Case[syncLoopOptions]{
		{Name: "the defaults", Change: func(*syncLoopOptions) {}},
		{Name: "a new trace and log", Change: func(o *syncLoopOptions) {
			o.traceFile, o.kubeletLog = filepath.Join(dir, "trace.out"), filepath.Join(dir, "kubelet.log")
		}},
		{Name: "an upper-case node name", Change: func(o *syncLoopOptions) { o.nodeName = "Walkthrough" }, WantErr: `--node-name "Walkthrough": a lowercase RFC 1123 subdomain`},
		{Name: "a timeout of 0", Change: func(o *syncLoopOptions) { o.timeout = 0 }, WantErr: "--timeout 0s: must be more than 0"},
		{Name: "a negative timeout", Change: func(o *syncLoopOptions) { o.timeout = -time.Second }, WantErr: "--timeout -1s: must be more than 0"},
		{Name: "a trace that exists", Change: func(o *syncLoopOptions) { o.traceFile = existing }, WantErr: "--trace " + existing + ": the file exists; name a new one (it is never overwritten)"},
		{Name: "a trace in no directory", Change: func(o *syncLoopOptions) { o.traceFile = filepath.Join(dir, "nope", "trace.out") }, WantErr: "--trace " + filepath.Join(dir, "nope", "trace.out") + ": its directory: "},
		{Name: "a log that exists", Change: func(o *syncLoopOptions) { o.kubeletLog = existing }, WantErr: "--kubelet-log " + existing + ": the file exists"},
		{Name: "trace and log the same file", Change: func(o *syncLoopOptions) {
			o.traceFile, o.kubeletLog = filepath.Join(dir, "same"), filepath.Join(dir, "same")
		}, WantErr: "--trace " + filepath.Join(dir, "same") + ": --kubelet-log names the same file"},
		{Name: "trace and log the same file, one relative", Change: func(o *syncLoopOptions) {
			o.traceFile, o.kubeletLog = "same", filepath.Join(dir, "same")
		}, WantErr: "--trace same: --kubelet-log names the same file"},
		{Name: "trace and log the same file, through a link to its directory", Change: func(o *syncLoopOptions) {
			o.traceFile, o.kubeletLog = filepath.Join(dir, "same"), filepath.Join(dir, "link", "same")
		}, WantErr: "--trace " + filepath.Join(dir, "same") + ": --kubelet-log names the same file"},
		{Name: "trace and log the same name in two directories", Change: func(o *syncLoopOptions) {
			o.traceFile, o.kubeletLog = filepath.Join(dir, "same"), filepath.Join(dir, "sub", "same")
		}},
	}
	validtable.Run(t, func() *syncLoopOptions { o := good; return &o }, (*syncLoopOptions).validate, tests)
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "the reader's\n", string(data))
	assert.NoFileExists(t, filepath.Join(dir, "trace.out"), "validate only looks")
}

// A run that fails once the kubelet's log went to its file still says why on the terminal (with
// cli.Run it exited 1 in silence: its "command failed" line went to klog, silenced by then), and
// the trace file it made first is gone again.
func TestFailedRunSaysWhy(t *testing.T) {
	tmp := t.TempDir()
	trace := filepath.Join(tmp, "trace.out")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CHAPTER_ARGS=--timeout 1ns --trace "+trace, "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Regexp(t, `(?m)^error: \S`, string(out))
	assert.NoFileExists(t, trace, "the trace file made for the run is removed on the error path; the run said:\n%s", out)
}

// Ctrl-C, a kill and a closed terminal, mid-run with the kubelet serving, end the run as an error
// does: it says it was interrupted, and everything it made is gone — the kubelet's root
// directory, the static pod directory, the temporary kubelet log, the trace file (a rerun with
// the same --trace would otherwise be refused). Go's default would end the process at once.
func TestInterruptedRunLeavesNothing(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			// A TMPDIR short enough for the kubelet's sockets, so its root directory is made there.
			tmp, err := os.MkdirTemp("", "c10-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(tmp) })
			trace := filepath.Join(t.TempDir(), "trace.out")
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "CHAPTER_ARGS=--trace "+trace, "TMPDIR="+tmp)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.WaitDelay = 10 * time.Second
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			// Once the kubelet's sync loop runs (its temporary log says so), in the middle of the run.
			var log string
			require.Eventually(t, func() bool {
				logs, _ := filepath.Glob(filepath.Join(tmp, "kubelet-walkthrough-*.log"))
				for _, l := range logs {
					data, _ := os.ReadFile(l)
					if strings.Contains(string(data), "Starting kubelet main sync loop") {
						log = l
						return true
					}
				}
				return false
			}, time.Minute, 50*time.Millisecond, "the kubelet never started its sync loop")
			roots, err := filepath.Glob(filepath.Join(tmp, "hollow-kubelet.*"))
			require.NoError(t, err)
			require.NotEmpty(t, roots, "the kubelet's root directory is in TMPDIR")
			require.FileExists(t, trace)
			require.NoError(t, cmd.Process.Signal(sig))

			var exit *exec.ExitError
			select {
			case err = <-exited:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("still running a minute after %v:\n%s", sig, &out)
			}
			require.ErrorAs(t, err, &exit, "%s", &out)
			assert.Equal(t, 1, exit.ExitCode(), "%s", &out)
			assert.Regexp(t, `(?m)^error: interrupted \(`+sig.String()+` signal received\)`, out.String())
			entries, err := os.ReadDir(tmp)
			require.NoError(t, err)
			var left []string
			for _, e := range entries {
				left = append(left, e.Name())
			}
			assert.Empty(t, left, "left in TMPDIR (the log was %s)", log)
			assert.NoFileExists(t, trace, "the trace file the run made")
		})
	}
}
