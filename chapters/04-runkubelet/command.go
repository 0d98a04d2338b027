package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/routes"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/podtable"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// runOptions are the chapter's flags.
type runOptions struct {
	program.KubeletFlags
	// absStaticPodPath is what the kubelet gets: it resolves nothing against its working directory.
	absStaticPodPath string

	out io.Writer
}

// NewRunKubeletCommand builds the chapter's command.
func NewRunKubeletCommand(ctx context.Context) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "04-runkubelet",
		Short: "Run the real kubelet in-process and list the static pods it serves on /pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			if err := o.complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.run(ctx, cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.StaticPodPath, "static-pod-path", "examples/static-pods", "directory of static pod manifests (the kubelet's staticPodPath)")
	f.StringVar(&o.NodeName, "node-name", realkubelet.DefaultNodeName, "node name (the kubelet's --hostname-override)")
	f.IntVar(&o.ReadOnlyPort, "read-only-port", 0, "read-only port on 127.0.0.1, free; 0 picks a free one")
	f.StringVar(&o.KubeletLog, "kubelet-log", "", `file for the kubelet's own log lines; "-" for stderr; default: a temporary file removed on exit`)
	f.DurationVar(&o.Wait, "wait", 30*time.Second, "how long to wait for every static pod to be Running before printing")
	f.BoolVar(&o.Once, "once", false, "print the pods and stop instead of serving until Ctrl-C")
	cmd.AddCommand(newRoutesCommand(ctx))
	return cmd
}

// newRoutesCommand prints the route table of the kubelet's servers (package routes): what
// the servers of the kubelet this chapter runs answer, path by path, and its sockets.
func newRoutesCommand(ctx context.Context) *cobra.Command {
	output := "markdown"
	cmd := &cobra.Command{
		Use:   "routes",
		Short: "Print the kubelet's HTTP route table and sockets, built from the real server code",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "markdown" && output != "text" {
				return fmt.Errorf("-o %s: want markdown or text", output)
			}
			// The server logs what it installs (and the read-only server's metrics handlers,
			// probed once each, that no kubelet is behind them): to a temporary file.
			_, closeLog, err := kubeletlog.ToFile("")
			if err != nil {
				return err
			}
			defer closeLog()
			table, err := routes.Build(ctx, realkubelet.DefaultNodeName)
			if err != nil {
				return err
			}
			if output == "text" {
				return table.Text(cmd.OutOrStdout())
			}
			return table.Markdown(cmd.OutOrStdout(), "en")
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", output, "markdown (the note notes/kubelet-routes.md) or text (one line per path)")
	return cmd
}

// complete checks the manifest directory before anything starts: the kubelet itself only logs
// a missing directory, and a reader would see an empty table without knowing why.
func (o *runOptions) complete() error {
	var err error
	o.absStaticPodPath, err = program.Directory("--static-pod-path", o.StaticPodPath)
	return err
}

func (o *runOptions) run(ctx context.Context, cmd *cobra.Command) error {
	ctx, stop := program.SignalContext(ctx)
	defer stop()
	// Last of all, after Stop: the stopped kubelet's pod workers go on syncing until the process
	// exits, and each sync can make its pod's directories under the root directory again.
	defer realkubelet.RemoveRootDirs()
	logger := klog.FromContext(ctx)

	// The kubelet logs a lot through klog. Unless asked otherwise, its lines go to a file so
	// that the table stays readable; the file's path is printed.
	logFile, closeLog, err := kubeletlog.ForProgram(cmd, o.KubeletLog)
	if err != nil {
		return err
	}
	defer closeLog()

	start := time.Now()
	k, err := realkubelet.Start(ctx, realkubelet.Options{
		NodeName:      o.NodeName,
		StaticPodPath: o.absStaticPodPath,
		ReadOnlyPort:  o.ReadOnlyPort,
	})
	if err != nil {
		return err
	}
	defer func() {
		k.Stop()
		fmt.Fprintf(o.out, "Stopped the kubelet and removed %s\n", k.RootDir)
	}()

	fmt.Fprintf(o.out, "The real kubelet (k8s.io/kubernetes %s) runs in this process as node %q, standalone (no apiserver).\n", realkubelet.Version(), o.NodeName)
	fmt.Fprintf(o.out, "Static pods: %s\nKubelet log: %s (removed on exit unless --kubelet-log names a file)\n\n", o.StaticPodPath, logFile)

	pods, err := k.WaitRunning(ctx, o.Wait)
	if err != nil {
		return err
	}
	logger.V(1).Info("First /pods answer", "pods", len(pods), "elapsed", time.Since(start))
	now := time.Now
	if err := podtable.Print(o.out, podtable.Rows(o.NodeName, pods),
		podtable.Namespace, podtable.Name, podtable.Status, podtable.Age(now)); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "\nAsk it yourself:\n  curl -s %s/pods\n  curl -s %s/healthz\n", k.ReadOnlyURL, k.ReadOnlyURL)
	if o.Once {
		return nil
	}
	fmt.Fprintln(o.out, "\nServing until Ctrl-C.")
	<-ctx.Done()
	fmt.Fprintln(o.out)
	return nil
}
