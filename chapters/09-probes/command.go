package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-probes/probes"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// probesOptions are the chapter's flags.
type probesOptions struct {
	nodeName   string
	kubeletLog string
	timeout    time.Duration
}

// NewProbesCommand builds the chapter's command.
func NewProbesCommand(ctx context.Context) *cobra.Command {
	o := &probesOptions{}
	cmd := &cobra.Command{
		Use:   "09-probes",
		Short: "Startup, readiness and liveness probes on the real kubelet, answered from files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			ctx, stop := program.SignalContext(ctx)
			defer stop()
			defer realkubelet.RemoveRootDirs() // last: a stopped kubelet's pod workers may make it again
			_, closeLog, err := kubeletlog.ToFile(o.kubeletLog)
			if err != nil {
				return err
			}
			defer closeLog()
			return probes.Run(ctx, probes.Options{NodeName: o.nodeName, StepTimeout: o.timeout, Out: cmd.OutOrStdout()})
		},
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.kubeletLog, "kubelet-log", "", `file for the kubelet's own log lines; "-" for stderr; default: a temporary file removed on exit`)
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long each step may take to show its outcome")
	cmd.Flags().StringVar(&o.nodeName, "node-name", realkubelet.DefaultNodeName, "node name (the kubelet's --hostname-override)")
	cmd.AddCommand(newNodeCommand(ctx, o))
	return cmd
}

// newNodeCommand is the node's side: the runtime stops being ready, and the Node's Ready
// condition follows, with an apiserver to post it to.
func newNodeCommand(ctx context.Context, o *probesOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "node",
		Short: "The runtime stops being ready, and the Node goes NotReady with the kubelet's reason (a mini-cluster in a private network namespace)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.nodeName = realkubelet.DefaultNodeName
			if err := o.validate(); err != nil {
				return err
			}
			ctx, stop := program.SignalContext(ctx)
			defer stop()
			nodeIP, inside := netns.Inside()
			if !inside {
				return netns.Rerun(ctx, os.Args[1:]...)
			}
			defer realkubelet.RemoveRootDirs()
			_, closeLog, err := kubeletlog.ForProgram(cmd, o.kubeletLog)
			if err != nil {
				return err
			}
			defer closeLog()
			return probes.RunNode(ctx, probes.NodeOptions{NodeIP: nodeIP, StepTimeout: o.timeout, Out: cmd.OutOrStdout()})
		},
	}
}

// validate checks every flag before anything starts.
func (o *probesOptions) validate() error {
	if err := program.NodeName("--node-name", o.nodeName); err != nil {
		return err
	}
	if err := program.Positive("--timeout", o.timeout); err != nil {
		return err
	}
	if o.kubeletLog != "" && o.kubeletLog != "-" {
		return program.Absent("--kubelet-log", o.kubeletLog)
	}
	return nil
}
