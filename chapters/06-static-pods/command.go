package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// NewStaticPodsCommand builds the chapter's command and its two subcommands.
func NewStaticPodsCommand(ctx context.Context) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "06-static-pods",
		Short: "Static pods as the kubelet reads them: load a directory once, or watch it change",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newLoadCommand(), newWatchCommand(ctx))
	return cmd
}

// sourceFlags are what both subcommands need: where the manifests are and whose node this is.
type sourceFlags struct {
	manifests string
	nodeName  string
}

func (f *sourceFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.manifests, "manifests", "examples/static-pods", "the static pod directory (the kubelet's staticPodPath)")
	cmd.Flags().StringVar(&f.nodeName, "node-name", "walkthrough", "node name: part of each pod's name and UID")
}

// validate checks the node name before anything is read: it becomes part of every pod's name.
func (f *sourceFlags) validate() error {
	return program.NodeName("--node-name", f.nodeName)
}

// directory checks that the manifests path is a readable directory, with a message that says
// which of the usual problems it is.
func (f *sourceFlags) directory() (string, error) {
	if f.manifests == "" { // filepath.Abs would make it the working directory
		return "", errors.New(`--manifests "": name the directory that holds the manifests`)
	}
	path, err := filepath.Abs(f.manifests)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("manifests directory %s does not exist", f.manifests)
	case err != nil:
		return "", readError(f.manifests, err)
	case !info.IsDir():
		return "", fmt.Errorf("%s is not a directory: --manifests takes the directory that holds the manifests", f.manifests)
	}
	if _, err := os.ReadDir(path); err != nil {
		return "", readError(f.manifests, err)
	}
	return path, nil
}

func readError(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("cannot read manifests directory %s: permission denied (the kubelet runs as root; try sudo, or a copy you can read)", path)
	}
	return fmt.Errorf("cannot read manifests directory %s: %w", path, err)
}

type loadOptions struct {
	sourceFlags
	output string
}

func newLoadCommand() *cobra.Command {
	o := &loadOptions{}
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Print the pods the toy would serve for a manifest directory, and why each other file is skipped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.add(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table, json or yaml")
	return cmd
}

func (o *loadOptions) run(out, errOut io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	var printer printers.ResourcePrinter
	switch o.output {
	case "json":
		printer = &printers.JSONPrinter{}
	case "yaml":
		printer = &printers.YAMLPrinter{}
	case "table":
	default:
		return fmt.Errorf("unknown output format %q: use table, json or yaml", o.output)
	}
	dir, err := o.directory()
	if err != nil {
		return err
	}
	listing, err := staticpods.List(dir, types.NodeName(o.nodeName))
	if err != nil {
		return readError(o.manifests, err)
	}
	// What the sync loop would receive: the first merge adds every pod. Its first-seen time
	// changes from run to run, so it is left out. A list as kubectl prints one: "items": [] when
	// there are no pods, not null.
	list := &v1.PodList{Items: []v1.Pod{}}
	list.Kind, list.APIVersion = "PodList", "v1"
	for _, u := range staticpods.NewMerger().Merge(listing.Pods) {
		for _, p := range u.Pods {
			delete(p.Annotations, kubetypes.ConfigFirstSeenAnnotationKey)
			list.Items = append(list.Items, *p)
		}
	}
	sortPods(list.Items)
	for _, r := range listing.Rejected {
		fmt.Fprintf(errOut, "skipped %s: %v\n", relative(dir, r.File), r.Reason)
	}
	if printer != nil {
		return printer.PrintObj(list, out)
	}
	tw := printers.GetNewTabWriter(out)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tUID\tCONTAINERS")
	for _, p := range list.Items {
		var images []string
		for _, c := range p.Spec.Containers {
			images = append(images, c.Image)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.UID, strings.Join(images, ","))
	}
	return tw.Flush()
}

type watchOptions struct {
	sourceFlags
	period   time.Duration
	duration time.Duration
}

func newWatchCommand(ctx context.Context) *cobra.Command {
	o := &watchOptions{}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Print the pod updates the toy's PodConfig sends as the manifest directory changes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(ctx, cmd.OutOrStdout())
		},
	}
	o.add(cmd)
	cmd.Flags().DurationVar(&o.period, "file-check-frequency", 20*time.Second, "re-list period, on top of inotify (the kubelet's fileCheckFrequency)")
	cmd.Flags().DurationVar(&o.duration, "for", 0, "stop after this long (0: until Ctrl-C)")
	return cmd
}

// validate checks the flags before anything starts: a period of 0 or less would panic in the
// re-list's ticker, and a negative --for would run until Ctrl-C.
func (o *watchOptions) validate() error {
	if err := o.sourceFlags.validate(); err != nil {
		return err
	}
	if err := program.Positive("--file-check-frequency", o.period); err != nil {
		return err
	}
	if o.duration < 0 {
		return fmt.Errorf("--for %s: must be 0 (until Ctrl-C) or more", o.duration)
	}
	return nil
}

func (o *watchOptions) run(ctx context.Context, out io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	dir, err := o.directory()
	if err != nil {
		return err
	}
	ctx, stop := program.SignalContext(ctx)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	cfg := staticpods.NewPodConfig(dir, types.NodeName(o.nodeName), o.period)
	var lastRejected string
	cfg.Source.Report = func(l staticpods.Listing, err error) {
		var b strings.Builder
		if err != nil {
			fmt.Fprintf(&b, "cannot read %s: %v (counts as empty)\n", o.manifests, err)
		}
		for _, r := range l.Rejected {
			fmt.Fprintf(&b, "skipped %s: %v\n", relative(dir, r.File), r.Reason)
		}
		if b.String() != lastRejected { // say it once, not at every re-list
			fmt.Fprint(out, b.String())
			lastRejected = b.String()
		}
	}
	fmt.Fprintf(out, "Watching %s for node %q (Ctrl-C to stop). Pod updates, as the sync loop gets them:\n", o.manifests, o.nodeName)
	done := make(chan struct{})
	go func() { cfg.Run(ctx); close(done) }()
	for {
		select {
		case <-ctx.Done():
			<-done
			fmt.Fprintln(out, "Stopped.")
			return nil
		case u := <-cfg.Updates():
			pods := append([]*v1.Pod(nil), u.Pods...)
			if len(pods) == 0 {
				fmt.Fprintf(out, "%-9s (no pods: the source is ready, and empty)\n", staticpods.OpName(u.Op))
			}
			sortPodPointers(pods)
			for _, p := range pods {
				fmt.Fprintf(out, "%-9s %s/%s  uid %s\n", staticpods.OpName(u.Op), p.Namespace, p.Name, p.UID)
			}
		}
	}
}

func relative(dir, file string) string {
	if rel, err := filepath.Rel(dir, file); err == nil {
		return rel
	}
	return file
}

func sortPods(pods []v1.Pod) {
	slices.SortFunc(pods, func(a, b v1.Pod) int { return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
}

func sortPodPointers(pods []*v1.Pod) {
	slices.SortFunc(pods, func(a, b *v1.Pod) int { return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
}
