package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// debugOptions are the chapter's flags.
type debugOptions struct {
	dlv     string
	gcflags string
	frames  int
	timeout time.Duration

	out io.Writer
}

// NewDebuggerCommand builds the chapter's command.
func NewDebuggerCommand(ctx context.Context) *cobra.Command {
	o := &debugOptions{}
	cmd := &cobra.Command{
		Use:   "13-debugger",
		Short: "Stop the real kubelet at every step of its startup chain in Delve",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			if err := o.validate(); err != nil {
				return err
			}
			ctx, cancel := program.SignalContext(ctx)
			defer cancel()
			return o.run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dlv, "dlv", "", "the Delve binary to run (make dlv builds .bin/dlv); default: build it from chapters/machinery/support/delve's pinned module")
	f.StringVar(&o.gcflags, "gcflags", "", `go build's -gcflags for the kubelet, e.g. "all=-N -l" for a build without optimizations (a second full build of Kubernetes)`)
	f.IntVar(&o.frames, "frames", 3, "how many callers to show at each stop")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long the whole session may take, the builds included")
	return cmd
}

// validate checks every flag before anything is built.
func (o *debugOptions) validate() error {
	if o.frames < 0 || o.frames > 50 {
		return fmt.Errorf("--frames %d: from 0 to 50", o.frames)
	}
	if err := program.Positive("--timeout", o.timeout); err != nil {
		return err
	}
	if o.dlv != "" {
		st, err := os.Stat(o.dlv)
		if err != nil {
			return fmt.Errorf("--dlv %s: %w", o.dlv, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("--dlv %s: not an executable file", o.dlv)
		}
		// The file checked is the file run: a bare name ("dlv") would otherwise be looked up in
		// PATH by exec, and run whatever Delve is there rather than ./dlv.
		if o.dlv, err = filepath.Abs(o.dlv); err != nil {
			return fmt.Errorf("--dlv %s: %w", o.dlv, err)
		}
	}
	return nil
}
