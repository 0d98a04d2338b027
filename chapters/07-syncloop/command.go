package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/07-syncloop/podjourney"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// syncLoopOptions are the chapter's flags.
type syncLoopOptions struct {
	nodeName       string
	waitForRestart bool
	kubeletLog     string
	traceFile      string
	timeout        time.Duration

	out io.Writer
}

// NewSyncLoopCommand builds the chapter's command.
func NewSyncLoopCommand(ctx context.Context) *cobra.Command {
	o := &syncLoopOptions{}
	cmd := &cobra.Command{
		Use:   "07-syncloop",
		Short: "Follow one static pod through the real kubelet's sync loop, from Go's execution trace",
		Long: `Starts the real kubelet in this process with an empty static pod directory, records Go's
execution trace while it adds web.yaml there, edits it and deletes it, and prints each step the
kubelet took — which goroutine created or woke which, with its stack, and each CRI call — as the
trace recorded it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			return o.run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.nodeName, "node-name", realkubelet.DefaultNodeName, "node name (the kubelet's --hostname-override)")
	f.BoolVar(&o.waitForRestart, "wait-for-restart", false, "after the edit, wait until the new version runs before deleting it (10-15s more: the pod worker's back-off)")
	f.StringVar(&o.kubeletLog, "kubelet-log", "", `file for the kubelet's own log lines; "-" for stderr; default: a temporary file removed on exit`)
	f.StringVar(&o.traceFile, "trace", "", "also write the raw execution trace to this new file (open it with `go tool trace FILE`)")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for each step")
	return cmd
}

// validate checks every flag before the kubelet starts: the run takes a minute, and a bad value
// found at its end (a trace file that cannot be written) would throw that minute away.
func (o *syncLoopOptions) validate() error {
	if err := program.NodeName("--node-name", o.nodeName); err != nil {
		return err
	}
	if err := program.Positive("--timeout", o.timeout); err != nil {
		return err
	}
	if o.kubeletLog != "" && o.kubeletLog != "-" {
		if err := program.Absent("--kubelet-log", o.kubeletLog); err != nil {
			return err
		}
	}
	if o.traceFile != "" {
		if err := program.Absent("--trace", o.traceFile); err != nil {
			return err
		}
		if o.kubeletLog != "" && o.kubeletLog != "-" && sameFile(o.traceFile, o.kubeletLog) {
			return fmt.Errorf("--trace %s: --kubelet-log names the same file", o.traceFile)
		}
	}
	return nil
}

// sameFile tells whether two paths of files that do not exist yet would name the same file:
// the same name in the same directory, however each path reaches it (relative or absolute, a
// symbolic link to the directory, /proc/self/cwd). Comparing the strings would miss `--trace x
// --kubelet-log $PWD/x`, which then fails only when the trace is made.
func sameFile(a, b string) bool {
	if filepath.Base(a) != filepath.Base(b) {
		return false
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	if errA == nil && errB == nil && absA == absB {
		return true
	}
	dirA, errA := os.Stat(filepath.Dir(a))
	dirB, errB := os.Stat(filepath.Dir(b))
	return errA == nil && errB == nil && os.SameFile(dirA, dirB)
}

func (o *syncLoopOptions) run(ctx context.Context) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	// Ctrl-C, a kill or a closed terminal cuts the run short the way an error does: every
	// deferred removal below still runs (Go's default would end the process at once, leaving the
	// kubelet's root directory, the manifests, the temporary log and an empty trace file).
	ctx, stop := program.SignalContext(ctx)
	defer stop()
	// Last of all: a stopped kubelet's pod workers may have made its root directory again.
	defer realkubelet.RemoveRootDirs()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("interrupted (%v): no journey recorded; removed what the run made", context.Cause(ctx))
		}
	}()
	// The trace's file is made first, so that the run cannot fail at its end for want of it; on
	// the error path it goes again, the reader's directory as it was.
	var trace *os.File
	if o.traceFile != "" {
		if trace, err = program.NewFile("--trace", o.traceFile); err != nil {
			return err
		}
		// The kubelet can end this process itself (its os.Exit after a failed listen, which skips
		// every deferred call): the file goes then too, with what kubeletlog.AtExit holds.
		unregister := kubeletlog.AtExit(func() { _ = os.Remove(o.traceFile) })
		defer func() {
			if closeErr := trace.Close(); err == nil && closeErr != nil {
				err = fmt.Errorf("--trace %s: %w", o.traceFile, closeErr)
			}
			if err != nil {
				_ = os.Remove(o.traceFile)
			}
			unregister()
		}()
	}
	_, closeLog, err := kubeletlog.ToFile(o.kubeletLog)
	if err != nil {
		return err
	}
	defer closeLog()

	rec, err := podjourney.Record(ctx, podjourney.Options{NodeName: o.nodeName, Timeout: o.timeout, WaitForRestart: o.waitForRestart})
	if err != nil {
		return err
	}
	if trace != nil {
		if _, err := trace.Write(rec.Trace); err != nil {
			return fmt.Errorf("--trace %s: %w", o.traceFile, err)
		}
	}
	evidence, err := podjourney.ReadEvidence(rec.Trace)
	if err != nil {
		return err
	}
	journey, err := podjourney.Build(rec, evidence)
	if err != nil {
		return err
	}

	fmt.Fprintf(o.out, "The real kubelet (k8s.io/kubernetes %s) ran in this process as node %q, standalone,\n", realkubelet.Version(), o.nodeName)
	fmt.Fprintf(o.out, "with an empty static pod directory. Go's execution tracer recorded it while web.yaml was\n")
	fmt.Fprintf(o.out, "added there, edited and deleted. Every step below is read from that trace: a goroutine\n")
	fmt.Fprintf(o.out, "(named by the outermost kubelet function it runs) creating or waking another, or calling\n")
	fmt.Fprintf(o.out, "the CRI runtime, or opening a SyncPod span; each with its stack, kubelet frames only.\n")
	if err := journey.Print(o.out); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "\n%d steps; the kubelet ran for %s\n", len(journey.Entries), rec.Elapsed.Round(time.Second))
	if o.traceFile != "" {
		fmt.Fprintf(o.out, "The raw trace is in %s: go tool trace %s\n", o.traceFile, o.traceFile)
	}
	return nil
}
