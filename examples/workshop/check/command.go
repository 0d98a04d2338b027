package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/workshop/checks"
)

type checkOptions struct {
	kubeconfig, context, answers, node string
	answersSet                         bool // --answers was given
}

// errFailed makes the exit code 1 after the check has said what is missing (reported: the FAIL
// line is the report).
var errFailed = fmt.Errorf("not done yet: %w", program.ErrReported)

// NewCheckCommand builds the checker's command.
func NewCheckCommand(ctx context.Context) *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check EXERCISE",
		Short: "Check a workshop exercise against the cluster of the current kubeconfig context",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil {
				return fmt.Errorf("exercise %q: give its number", args[0])
			}
			o.answersSet = cmd.Flags().Changed("answers")
			// Ctrl-C ends a check cleanly: exercise 16's builds the kubelet and Delve into a
			// temporary directory, which must go with it.
			ctx, stop := program.SignalContext(ctx)
			defer stop()
			return o.run(ctx, cmd.OutOrStdout(), n)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig (default: $KUBECONFIG or ~/.kube/config, as kubectl)")
	f.StringVar(&o.context, "context", "", "kubeconfig context")
	f.StringVar(&o.answers, "answers", "examples/workshop/answers", "the directory of your answer files")
	f.StringVar(&o.node, "node", "", "the node to look at (default: the cluster's only node)")
	return cmd
}

// validate checks the flags before the cluster is asked anything: a node name no node can have
// would otherwise be looked up and reported missing, and an answers directory named with a typo
// read as answers not yet written.
func (o *checkOptions) validate(ex checks.Exercise) error {
	if o.node != "" {
		if err := program.NodeName("--node", o.node); err != nil {
			return err
		}
	}
	if !ex.Offline && o.kubeconfig != "" {
		if _, err := os.Stat(o.kubeconfig); err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
		}
	}
	// The default directory is missing until the attendee copies the template: the exercise's
	// check says so, with the cp line. One the attendee names must be there.
	if ex.Answers != "" && o.answersSet {
		if _, err := program.Directory("--answers", o.answers); err != nil {
			return err
		}
	}
	return nil
}

func (o *checkOptions) run(ctx context.Context, out io.Writer, n int) error {
	ex, err := checks.Find(n)
	if err != nil {
		return err
	}
	if err := o.validate(ex); err != nil {
		return err
	}
	env := checks.Env{Node: o.node}
	if !ex.Offline {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.kubeconfig
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
		config, err := loader.ClientConfig()
		if err != nil {
			return fmt.Errorf("no cluster: %w (start minikube, or chapter 08)", err)
		}
		// minikube names a cluster's context after its profile: what is on the node is read
		// through that profile's minikube ssh.
		env.Profile = o.context
		if raw, err := loader.RawConfig(); err == nil && env.Profile == "" {
			env.Profile = raw.CurrentContext
		}
		if env.Client, err = kubernetes.NewForConfig(config); err != nil {
			return err
		}
		env.Config = config
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	answers, err := filepath.Abs(o.answers)
	if err != nil {
		return err
	}
	env.Answers, env.Root = answers, root
	result, err := ex.Check(ctx, env)
	if err != nil {
		return fmt.Errorf("exercise %d could not be checked: %w", n, err)
	}
	fmt.Fprintf(out, "Exercise %d — %s: ", ex.Number, ex.Title)
	if result.Passed() {
		fmt.Fprintln(out, "PASS")
	} else {
		fmt.Fprintln(out, "FAIL")
		for _, m := range result.Missing {
			fmt.Fprintf(out, "  missing: %s\n", m)
		}
	}
	for _, note := range result.Notes {
		fmt.Fprintf(out, "  note: %s\n", note)
	}
	if !result.Passed() {
		return errFailed
	}
	return nil
}
