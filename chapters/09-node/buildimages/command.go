package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-node/nodeimages"
)

// NewCommand returns the buildimages command.
func NewCommand(ctx context.Context) *cobra.Command {
	var opts nodeimages.Options
	cmd := &cobra.Command{
		Use:          "buildimages",
		Short:        "Write the images kubeadm asks for as docker archives, from locally built binaries",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.SetContext(ctx)
	f := cmd.Flags()
	f.StringVar(&opts.Binaries, "binaries", ".bin/node/images", "directory with one binary per image (make node-binaries)")
	f.StringVar(&opts.LibraryRoot, "library-root", ".bin/node/rootfs", "Debian root filesystem the shared libraries and kube-proxy's iptables and nft come from")
	f.StringVar(&opts.Out, "out", ".bin/node/image-archives", "directory of the archives (NAME.tar)")
	f.StringVar(&opts.Versions.Kubernetes, "kubernetes-version", "", "tag of the control plane and kube-proxy images (v1.37.2)")
	f.StringVar(&opts.Versions.Etcd, "etcd-version", "", "tag of the etcd image (kubeadm's DefaultEtcdVersion, 3.7.0-0)")
	f.StringVar(&opts.Versions.CoreDNS, "coredns-version", "", "tag of the CoreDNS image (kubeadm's CoreDNSVersion)")
	f.StringVar(&opts.Versions.Pause, "pause-version", "", "tag of the pause image (kubeadm's PauseVersion)")
	return cmd
}

func run(ctx context.Context, opts nodeimages.Options, out io.Writer) error {
	start := time.Now()
	images, err := nodeimages.Build(ctx, opts)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, image := range images {
		state := "up to date"
		if image.Built {
			state = "built"
		}
		fmt.Fprintf(w, "%s\t%s\t%d MB\t%s\n", image.Ref, image.Archive, (image.Size+1<<19)>>20, state)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d images in %s.\n", len(images), time.Since(start).Round(100*time.Millisecond))
	return nil
}
