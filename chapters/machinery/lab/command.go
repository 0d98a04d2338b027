package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/images"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// NewCommand returns the lab's command.
func NewCommand(ctx context.Context) *cobra.Command {
	cmd := &cobra.Command{
		Use:          "lab",
		Short:        "Real minikube on a real Docker engine, offline: make what they need, run commands with them",
		SilenceUsage: true,
	}
	cmd.SetContext(ctx)
	cmd.AddCommand(newRunCommand(), newRootfsCommand(), newImagesCommand(), newBaseImageCommand(), newRunImageCommand(), newTraceCommand())
	return cmd
}

// runOptions are `lab run`'s.
type runOptions struct {
	Options
	serve bool
	// asAttendee and owns make Options.Attendee.
	asAttendee bool
	owns       []string
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- COMMAND [ARG...]",
		Short: "Start a lab, run a command in it as on a laptop with Docker and minikube, then stop the lab",
		Long: "Start a lab — a Docker engine in namespaces of its own with the base image loaded, minikube's home and cache —\n" +
			"run COMMAND there (minikube, kubectl and docker reach the lab's cluster; the offline settings are in its environment),\n" +
			"then delete what minikube made and stop the engine. With --serve the lab stays until Ctrl-C after the command.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Log = cmd.ErrOrStderr()
			if o.asAttendee {
				o.Attendee = &Attendee{Owns: o.owns}
			} else if cmd.Flags().Changed("owns") {
				return errors.New("--owns says what the attendee writes: it needs --as-attendee")
			}
			if err := checkRunDir(o.Dir); err != nil {
				return err
			}
			return o.run(cmd.Context(), args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "run directory, new or empty (made 0700: it holds the cluster's keys), kept when the lab stops (default: a temporary one, removed when the lab stops)")
	f.StringVar(&o.Components, "components", ".bin/node", "the lab's components (make node-components)")
	f.StringVar(&o.Minikube, "minikube", ".bin/minikube", "minikube, built from its module (make minikube)")
	f.BoolVar(&o.serve, "serve", false, "after the command, keep the lab until Ctrl-C")
	f.BoolVar(&o.asAttendee, "as-attendee", false, "run the commands as a workshop attendee: a normal user in the group of the engine's socket, who writes --owns and Go's caches as their owner does (in the lab's mount namespace only)")
	f.BoolVar(&o.RemoteEngine, "remote-engine", false, "give the commands the engine at DOCKER_HOST=tcp://"+RemoteEngineAddress+" (in the lab's own network namespace), so that minikube takes Docker Desktop's path: the apiserver, ssh and the image commands through random ports of 127.0.0.1")
	f.StringSliceVar(&o.owns, "owns", []string{"."}, "with --as-attendee: directories the attendee's commands write as their owner (the checkout)")
	return cmd
}

func (o *runOptions) run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	// Ctrl-C reaches the command (it runs in this terminal's foreground process group); the lab
	// stops after it.
	ctx, stop := program.SignalContext(ctx)
	defer stop()
	_, statErr := os.Stat(o.Dir)
	made := o.Dir != "" && errors.Is(statErr, fs.ErrNotExist)
	l, err := Start(ctx, o.Options)
	if err != nil {
		if made { // a run directory the lab made for a lab that did not start
			_ = os.RemoveAll(o.Dir)
		}
		return err
	}
	defer func() {
		start := time.Now()
		stopErr := l.Stop(context.Background())
		if stopErr == nil {
			fmt.Fprintf(stderr, "Stopped the lab in %s: its engine, containers, network and cgroups are gone.\n", time.Since(start).Round(100*time.Millisecond))
		}
		err = errors.Join(err, stopErr)
	}()
	shell, err := l.WriteShell()
	if err != nil {
		return err
	}
	cmd := l.CommandIn(context.WithoutCancel(ctx), "", args[0], args[1:]...) // where `lab run` was started
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
		}
		return err
	}
	if !o.serve || ctx.Err() != nil {
		return nil
	}
	fmt.Fprintf(stdout, "\nThe lab serves until Ctrl-C. A shell in it, where minikube, kubectl and docker reach its cluster: sudo %s\n", shell)
	<-ctx.Done()
	fmt.Fprintln(stdout)
	return nil
}

// WriteShell writes an executable script into the run directory that runs a command (a shell,
// by default) in the lab, and returns its path.
func (l *Lab) WriteShell() (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# A command (bash by default) in the lab: on its Docker engine's network, with its environment.\n")
	if l.laptop != nil {
		// As the attendee, on the laptop, in this directory.
		enter := l.laptop.enter("")
		enter[len(enter)-2] = `--chdir="$PWD"`
		fmt.Fprintf(&b, "exec nsenter %s %s", strings.Join(l.Engine.Enter(), " "), strings.Join(enter, " "))
	} else {
		fmt.Fprintf(&b, "exec nsenter %s -- env", strings.Join(l.Engine.Enter(), " "))
	}
	for _, kv := range l.Settings() {
		b.WriteString(" " + shellQuote(kv))
	}
	b.WriteString(` "${@:-bash}"` + "\n")
	path := filepath.Join(l.Dir, "shell")
	return path, os.WriteFile(path, []byte(b.String()), 0o755)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func newRootfsCommand() *cobra.Command {
	var dir, mirror, cache string
	cmd := &cobra.Command{
		Use:   "rootfs",
		Short: "Make the base image's root file system with debootstrap (Debian bookworm), unless it is up to date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRootfsDir(dir); err != nil {
				return err
			}
			if err := checkMirror(mirror); err != nil {
				return err
			}
			return images.MakeRootfs(cmd.Context(), dir, mirror, cache, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&dir, "rootfs", ".bin/node/rootfs", "where to make it: a new or empty directory, or one this command made")
	cmd.Flags().StringVar(&mirror, "mirror", os.Getenv("DEBIAN_MIRROR"), "Debian mirror (default: $DEBIAN_MIRROR, else the Debian source of this machine's apt, else debootstrap's own)")
	cmd.Flags().StringVar(&cache, "cache", images.DefaultRootfsCache(), "where a copy of each root file system made is kept, by recipe and mirror, and used again for a week (\"\": none)")
	return cmd
}

func newImagesCommand() *cobra.Command {
	var opts images.Options
	var kubernetesBinaries, cache string
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Fill minikube's cache: the images kubeadm and minikube ask for, as docker archives, and the Kubernetes binaries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkVersions(cmd); err != nil {
				return err
			}
			opts.Out = filepath.Join(cache, "images", "amd64")
			return fillCache(cmd.Context(), opts, kubernetesBinaries, cache, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Binaries, "binaries", ".bin/node/images", "directory with one binary per image (make node-binaries)")
	f.StringVar(&opts.LibraryRoot, "library-root", ".bin/node/rootfs", "Debian root file system the shared libraries and kube-proxy's iptables and nft come from")
	f.StringVar(&kubernetesBinaries, "kubernetes-binaries", ".bin/node/bin", "directory with kubeadm, kubelet and kubectl")
	f.StringVar(&cache, "cache", ".bin/node/"+CacheDir, "minikube's cache directory (what MINIKUBE_HOME/.minikube/cache is)")
	f.StringVar(&opts.Versions.Kubernetes, "kubernetes-version", "", "tag of the control plane and kube-proxy images (v1.37.2)")
	f.StringVar(&opts.Versions.Etcd, "etcd-version", "", "tag of the etcd image (kubeadm's DefaultEtcdVersion, 3.7.0-0)")
	f.StringVar(&opts.Versions.CoreDNS, "coredns-version", "", "tag of the CoreDNS image (kubeadm's CoreDNSVersion)")
	f.StringVar(&opts.Versions.Pause, "pause-version", "", "tag of the pause image (kubeadm's PauseVersion)")
	f.StringVar(&opts.Versions.StorageProvisioner, "storage-provisioner-version", "", "tag of minikube's storage-provisioner image (v5)")
	return cmd
}

// fillCache writes the images into minikube's cache and links the Kubernetes binaries where
// minikube looks for them (cache/linux/<arch>/<version>/), so that nothing is downloaded.
func fillCache(ctx context.Context, opts images.Options, kubernetesBinaries, cache string, out io.Writer) error {
	start := time.Now()
	versionDir := filepath.Join(cache, "linux", "amd64", opts.Versions.Kubernetes)
	for _, name := range []string{"kubeadm", "kubelet", "kubectl"} {
		if err := checkLink(filepath.Join(versionDir, name)); err != nil {
			return err
		}
	}
	built, err := images.Build(ctx, opts)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, image := range built {
		fmt.Fprintln(w, image)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := os.MkdirAll(versionDir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"kubeadm", "kubelet", "kubectl"} {
		target, err := filepath.Abs(filepath.Join(kubernetesBinaries, name))
		if err != nil {
			return err
		}
		if _, err := os.Stat(target); err != nil {
			return fmt.Errorf("minikube's cache needs %s: %w", name, err)
		}
		link := filepath.Join(versionDir, name)
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d images and kubeadm, kubelet, kubectl in minikube's cache %s, in %s.\n", len(built), cache, time.Since(start).Round(100*time.Millisecond))
	return nil
}

func newBaseImageCommand() *cobra.Command {
	var opts images.BaseOptions
	cmd := &cobra.Command{
		Use:   "base-image",
		Short: "Write the base image minikube runs as its node (kicbase's equivalent) as a docker archive",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkArchive("--out", opts.Out); err != nil {
				return err
			}
			start := time.Now()
			image, err := images.BuildBase(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s in %s\n", image, time.Since(start).Round(100*time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Rootfs, "rootfs", ".bin/node/rootfs", "the root file system (lab rootfs)")
	f.StringVar(&opts.Bin, "bin", ".bin/node/bin", "containerd, ctr, runc, runcshim, crictl, buildkitd, buildctl")
	f.StringVar(&opts.CNI, "cni", ".bin/node/cni", "the CNI plugins")
	f.StringVar(&opts.Out, "out", ".bin/node/"+BaseImageArchive, "the archive: a new file, or one this command wrote")
	f.StringVar(&opts.Ref, "ref", BaseImageRef, "the image's name")
	return cmd
}

func newRunImageCommand() *cobra.Command {
	var opts images.RunImageOptions
	var mirror, cache string
	cmd := &cobra.Command{
		Use:   "run-image",
		Short: "Write the image .ci/in-docker runs the chapters in (the Go image and .devcontainer/Dockerfile's equivalent) as a docker archive",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRootfsDir(opts.Rootfs); err != nil {
				return err
			}
			if err := checkMirror(mirror); err != nil {
				return err
			}
			if err := checkArchive("--out", opts.Out); err != nil {
				return err
			}
			if opts.Ref == "" {
				return errors.New(`--ref "": name the image (.ci/in-docker image prints the name make run looks for)`)
			}
			start := time.Now()
			if err := images.RunImageRecipe().Make(cmd.Context(), opts.Rootfs, mirror, cache, cmd.OutOrStdout()); err != nil {
				return err
			}
			image, err := images.BuildRunImage(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s in %s\n", image, time.Since(start).Round(100*time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Rootfs, "rootfs", ".bin/docker/rootfs", "where to make its root file system: a new or empty directory, or one this command made")
	f.StringVar(&opts.GoRoot, "goroot", "", "the Go to copy into /usr/local/go (go env GOROOT)")
	f.StringVar(&opts.Out, "out", ".bin/docker/run-image.tar", "the archive: a new file, or one this command wrote")
	f.StringVar(&opts.Ref, "ref", "", "the image's name (.ci/in-docker image)")
	f.StringVar(&mirror, "mirror", os.Getenv("DEBIAN_MIRROR"), "Debian mirror (default: $DEBIAN_MIRROR, else the Debian source of this machine's apt, else debootstrap's own)")
	f.StringVar(&cache, "cache", images.DefaultRootfsCache(), "where a copy of each root file system made is kept, by recipe and mirror, and used again for a week (\"\": none)")
	return cmd
}

// checkRootfsDir checks --rootfs before anything is made: lab rootfs removes the directory and
// makes it again unless it holds today's root file system, so it takes only a directory that is
// new, empty, or carries its marker (images.CheckRootfsDir).
func checkRootfsDir(dir string) error {
	if dir == "" {
		return errors.New(`--rootfs "": name a directory`)
	}
	if err := images.CheckRootfsDir(dir); err != nil {
		return fmt.Errorf("--rootfs %s: %w", dir, err)
	}
	return nil
}

// checkArchive checks an archive a flag names: base-image writes it again when its inputs change,
// so it takes a new file or one it wrote (its inputs' digest, FILE.inputs, beside it), never
// another file.
func checkArchive(flag, path string) error {
	if path == "" {
		return fmt.Errorf("%s %q: name a file", flag, path)
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if _, err := os.Stat(path + ".inputs"); err != nil {
		return fmt.Errorf("%s %s: a file this command did not write (no %s.inputs beside it), and it is never overwritten: name a new file", flag, path, filepath.Base(path))
	}
	return nil
}

// checkLink checks that where images links a Kubernetes binary there is nothing, or a link it
// made: a file there is not replaced.
func checkLink(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		return fmt.Errorf("--cache: %s is a file, not a link images made, and it is never replaced: move it, or name another --cache", path)
	}
	return nil
}

// imageTag is Docker's grammar of a tag (distribution/reference): the versions become tags,
// and the Kubernetes version also a directory of minikube's cache.
var imageTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// kubernetesVersion is how Kubernetes tags its images and minikube names its cache's
// directories: v, then semver (v1.37.2, v1.38.0-rc.1).
var kubernetesVersion = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// checkVersions checks the images' version flags: each names a tag, the Kubernetes version as
// Kubernetes writes one.
func checkVersions(cmd *cobra.Command) error {
	for _, flag := range []string{"kubernetes-version", "etcd-version", "coredns-version", "pause-version", "storage-provisioner-version"} {
		v, _ := cmd.Flags().GetString(flag)
		switch {
		case v == "":
			return fmt.Errorf("--%s %q: name the image's tag", flag, v)
		case !imageTag.MatchString(v):
			return fmt.Errorf("--%s %q: not an image tag (letters, digits, _ . -, up to 128, not starting with . or -)", flag, v)
		case flag == "kubernetes-version" && !kubernetesVersion.MatchString(v):
			return fmt.Errorf("--%s %q: want a Kubernetes version as its images are tagged: v, then MAJOR.MINOR.PATCH (v1.37.2)", flag, v)
		}
	}
	return nil
}

// checkRunDir checks --dir before the lab starts: a new or empty directory, so that the lab's
// files (its shell, kubeconfig, minikube's home) overwrite none of the reader's.
func checkRunDir(dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--dir %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("--dir %s: not empty; the lab writes its files there (shell, kubeconfig, minikube's home): name a new or empty directory", dir)
	}
	return nil
}

// checkMirror checks --mirror before lab rootfs removes the old root file system: debootstrap
// takes an http, https or file URL, and found a bad one only after that.
func checkMirror(mirror string) error {
	if mirror == "" {
		return nil // the machine's apt source, or debootstrap's own
	}
	u, err := url.Parse(mirror)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") || (u.Scheme != "file" && u.Host == "") {
		return fmt.Errorf("--mirror %q: want a Debian mirror's http://, https:// or file:// URL (deb.debian.org/debian is http://deb.debian.org/debian)", mirror)
	}
	return nil
}
