package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/05-bootstrap/toykubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/podtable"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

type bootstrapOptions struct {
	program.KubeletFlags // ReadOnlyPort is the real kubelet's
	// toyReadOnlyPort is the toy kubelet's read-only port on 127.0.0.1 (0: a free one).
	toyReadOnlyPort int
	out             io.Writer
}

// NewBootstrapCommand builds the chapter's command.
func NewBootstrapCommand(ctx context.Context) *cobra.Command {
	o := &bootstrapOptions{}
	cmd := &cobra.Command{
		Use:   "05-bootstrap",
		Short: "Start the toy kubelet and the real one side by side, as startKubelet starts a Bootstrap, and compare their /pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			return o.run(ctx, cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.StaticPodPath, "static-pod-path", "examples/static-pods", "directory of static pod manifests, for both kubelets")
	f.StringVar(&o.NodeName, "node-name", realkubelet.DefaultNodeName, "node name of both kubelets")
	f.IntVar(&o.ReadOnlyPort, "read-only-port", 0, "the real kubelet's read-only port on 127.0.0.1, free; 0 picks a free one")
	f.IntVar(&o.toyReadOnlyPort, "toy-read-only-port", 0, "the toy kubelet's read-only port on 127.0.0.1, free; 0 picks a free one")
	f.StringVar(&o.KubeletLog, "kubelet-log", "", `file for both kubelets' log lines; "-" for stderr; default: a temporary file removed on exit`)
	f.DurationVar(&o.Wait, "wait", 30*time.Second, "how long to wait for both to run every static pod")
	f.BoolVar(&o.Once, "once", false, "print and stop instead of serving until Ctrl-C")
	return cmd
}

// validate checks every flag before either kubelet starts.
func (o *bootstrapOptions) validate() error {
	if o.ReadOnlyPort != 0 && o.ReadOnlyPort == o.toyReadOnlyPort {
		return fmt.Errorf("--read-only-port %d and --toy-read-only-port %d: each kubelet needs a port of its own", o.ReadOnlyPort, o.toyReadOnlyPort)
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return program.Port("--toy-read-only-port", o.toyReadOnlyPort)
}

func (o *bootstrapOptions) run(ctx context.Context, cmd *cobra.Command) error {
	if err := o.validate(); err != nil {
		return err
	}
	ctx, stop := program.SignalContext(ctx)
	defer stop()
	// Last of all, after Stop: the stopped kubelet's pod workers go on syncing until the process
	// exits, and each sync can make its pod's directories under the root directory again.
	defer realkubelet.RemoveRootDirs()
	path, err := program.Directory("--static-pod-path", o.StaticPodPath)
	if err != nil {
		return err
	}
	logFile, closeLog, err := kubeletlog.ForProgram(cmd, o.KubeletLog)
	if err != nil {
		return err
	}
	defer closeLog()

	toy, err := toykubelet.Start(ctx, toykubelet.StartOptions{NodeName: types.NodeName(o.NodeName), StaticPodPath: path, ReadOnlyPort: o.toyReadOnlyPort})
	if err != nil {
		return fmt.Errorf("start the toy kubelet: %w", err)
	}
	defer toy.Stop()
	real, err := realkubelet.Start(ctx, realkubelet.Options{NodeName: o.NodeName, StaticPodPath: path, ReadOnlyPort: o.ReadOnlyPort})
	if err != nil {
		return fmt.Errorf("start the real kubelet: %w", err)
	}
	defer real.Stop()

	fmt.Fprintf(o.out, `Two kubelets in this process, one interface: both are a kubelet.Bootstrap.
  toy:  toykubelet.Start → BirthCry, StartGarbageCollection, then startKubelet's goroutines
  real: app.RunKubelet   → createAndInitKubelet → NewMainKubelet, then startKubelet
Static pods: %s, node %q. Kubelet log: %s

`, o.StaticPodPath, o.NodeName, logFile)

	toyPods, realPods, err := o.waitForBoth(ctx, toy.ReadOnlyURL, real.ReadOnlyURL)
	if err != nil {
		return err
	}
	if err := compare(o.out, toyPods, realPods); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "\nAsk them yourself:\n  toy:  curl -s %s/pods\n  real: curl -s %s/pods\n", toy.ReadOnlyURL, real.ReadOnlyURL)
	if o.Once {
		return nil
	}
	fmt.Fprintln(o.out, "\nServing until Ctrl-C.")
	<-ctx.Done()
	fmt.Fprintln(o.out)
	return nil
}

// waitForBoth polls both /pods until both run every pod they list, or until o.Wait.
func (o *bootstrapOptions) waitForBoth(ctx context.Context, toyURL, realURL string) ([]v1.Pod, []v1.Pod, error) {
	deadline := time.Now().Add(o.Wait)
	for {
		toyPods, err := realkubelet.PodsAt(ctx, toyURL)
		if err != nil {
			return nil, nil, fmt.Errorf("toy kubelet: %w", err)
		}
		realPods, err := realkubelet.PodsAt(ctx, realURL)
		if err != nil {
			return nil, nil, fmt.Errorf("real kubelet: %w", err)
		}
		if (realkubelet.AllRunning(toyPods) && realkubelet.AllRunning(realPods) && len(toyPods) == len(realPods)) || time.Now().After(deadline) {
			return toyPods, realPods, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// compare prints one row per pod name with each kubelet's status, and whether they agree on
// the pod's UID (a hash of the manifest, the node name and the file's path).
func compare(w io.Writer, toyPods, realPods []v1.Pod) error {
	type pair struct{ toy, real *v1.Pod }
	rows := map[string]*pair{}
	for i := range toyPods {
		p := &toyPods[i]
		rows[p.Namespace+"/"+p.Name] = &pair{toy: p}
	}
	for i := range realPods {
		p := &realPods[i]
		if r, ok := rows[p.Namespace+"/"+p.Name]; ok {
			r.real = p
		} else {
			rows[p.Namespace+"/"+p.Name] = &pair{real: p}
		}
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tTOY\tREAL\tSAME UID")
	same := 0
	for _, k := range keys {
		r := rows[k]
		status := func(p *v1.Pod) string {
			if p == nil {
				return "-"
			}
			return podtable.PodStatus(p)
		}
		agree := r.toy != nil && r.real != nil && r.toy.UID == r.real.UID
		if agree {
			same++
		}
		ns, name, _ := strings.Cut(k, "/")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ns, name, status(r.toy), status(r.real), yesNo(agree))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nThe toy serves %d pods, the real kubelet %d; %d have the same UID in both.\n", len(toyPods), len(realPods), same)
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
