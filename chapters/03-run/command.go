package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/kubernetes/cmd/kubelet/app/options"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/02-config/configload"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
)

type runOptions struct {
	config      string
	only        []int
	kubeletArgs []string
	out         io.Writer
}

// NewRunCommand builds the chapter's command.
func NewRunCommand(ctx context.Context) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "03-run [--config FILE] [-- KUBELET-FLAGS...]",
		Short: "Walk the steps of the kubelet's run(), executing the safe ones",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.out = cmd.OutOrStdout()
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				o.kubeletArgs, args = args[dash:], args[:dash]
			}
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments %q: kubelet flags go after --", args)
			}
			return o.run(ctx)
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "examples/kubelet-config.yaml", `the kubelet configuration file; "" for none (flag defaults)`)
	cmd.Flags().IntSliceVar(&o.only, "only", nil, "show only these steps, e.g. 3,4 (every step still runs, in order)")
	return cmd
}

// server builds the KubeletServer the way NewKubeletCommand's RunE does: the config file, the
// node flags, and the command line parsed over both.
func (o *runOptions) server(ctx context.Context) (*options.KubeletServer, error) {
	flags := options.NewKubeletFlags()
	kc, err := options.NewKubeletConfiguration()
	if err != nil {
		return nil, err
	}
	if o.config != "" {
		if kc, err = configload.LoadConfigFile(ctx, o.config); err != nil {
			return nil, fmt.Errorf("--config %s: %w", o.config, err)
		}
	}
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	fs.SetOutput(io.Discard)
	flags.AddFlags(fs)
	options.AddKubeletConfigFlags(fs, kc)
	if err := fs.Parse(o.kubeletArgs); err != nil {
		return nil, fmt.Errorf("kubelet flags: %w", err)
	}
	return &options.KubeletServer{KubeletFlags: *flags, KubeletConfiguration: *kc}, nil
}

func (o *runOptions) run(ctx context.Context) error {
	for _, n := range o.only {
		if n < 1 || n > len(steps) {
			return fmt.Errorf("--only %d: the steps are numbered 1 to %d", n, len(steps))
		}
	}
	server, err := o.server(ctx)
	if err != nil {
		return err
	}
	// Nothing this chapter does may write outside a temporary directory.
	tmp, err := os.MkdirTemp("", "kubelet-walkthrough-03-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	server.RootDirectory, server.CertDirectory = tmp, tmp+"/pki"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	source := o.config
	if source == "" {
		source = "flag defaults"
	}
	fmt.Fprintf(o.out, "Configuration: %s; --root-dir and --cert-dir point at a temporary directory.\n\n", source)
	fmt.Fprint(o.out, "app.Run (server.go#L542-L560) logs the version, calls initForOS (it only acts for Windows\n"+
		"services), then run (server.go#L656-L1012), whose steps are:\n\n")
	s := &state{server: server}
	counts := map[outcome]int{}
	shown := 0
	for i, st := range steps {
		var result outcome
		var note string
		logged := kubeletlog.Capture(func() { result, note = st.do(ctx, s) })
		if len(o.only) > 0 && !slices.Contains(o.only, i+1) {
			continue // it ran: later steps may need what it found
		}
		shown++
		counts[result]++
		fmt.Fprintf(o.out, "%2d. %-50s %-21s %s\n    %s\n", i+1, st.name, st.lines(), result, note)
		for _, line := range logged {
			fmt.Fprintf(o.out, "    kubelet log: %s\n", line)
		}
	}
	what := fmt.Sprintf("%d steps", len(steps))
	if shown < len(steps) {
		what = fmt.Sprintf("%d of %d steps shown", shown, len(steps))
	}
	fmt.Fprintf(o.out, "\n%s: %d ran here with the real functions, %d were no-ops for this configuration, "+
		"%d failed as they would on this machine, %d were skipped.\n",
		what, counts[ran], counts[noop], counts[failed], counts[skipped])
	return nil
}

func nodeNameOf(s *state) types.NodeName { return types.NodeName(s.nodeName) }

// thresholdValue prints an eviction threshold as it was written: a quantity or a percentage.
func thresholdValue(q *resource.Quantity, percentage float32) string {
	if q != nil {
		return q.String()
	}
	return strconv.FormatFloat(float64(percentage*100), 'f', -1, 32) + "%"
}
