package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/tools/go/packages"
)

// A build for another platform proves two things: the packages' files that platform's build
// constraints select type-check together with every dependency's (the compiler's front end),
// and the compiler's back end turns them into machine code. The back end is the same Go
// compiler for every platform, and what it could reject a type-checker accepts only through
// assembly or //go:linkname, which the cross-platform chapters do not use; the front end is
// where a chapter breaks on macOS or Windows (a Linux-only file, a syscall, a build tag). So
// this checks the front end, from source, the way go/types does for gopls and go vet, for each
// platform: a few minutes less per platform than a build of the kubelet's packages, and no
// second copy of them in the build cache.

type options struct {
	platforms []string
	dir       string // where the patterns are resolved; empty: the working directory
	out       io.Writer
}

func newCommand(ctx context.Context) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "typecheck --platform GOOS/GOARCH [--platform ...] PACKAGE...",
		Short: "Type-check packages and all their dependencies from source for other platforms (CGO_ENABLED=0)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.out = cmd.OutOrStdout()
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), args)
		},
		SilenceUsage: true,
	}
	cmd.SetContext(ctx)
	cmd.Flags().StringSliceVar(&o.platforms, "platform", nil, "GOOS/GOARCH to check for (repeatable)")
	return cmd
}

func (o *options) validate() error {
	if len(o.platforms) == 0 {
		return fmt.Errorf("--platform GOOS/GOARCH is required")
	}
	for _, p := range o.platforms {
		if goos, goarch, ok := strings.Cut(p, "/"); !ok || goos == "" || goarch == "" {
			return fmt.Errorf("--platform %q: want GOOS/GOARCH, such as darwin/arm64", p)
		}
	}
	return nil
}

func (o *options) run(ctx context.Context, patterns []string) error {
	failed := 0
	for _, p := range o.platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		n, err := check(ctx, o.dir, goos, goarch, patterns, o.out)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		failed += n
	}
	if failed > 0 {
		return fmt.Errorf("%d errors", failed)
	}
	return nil
}

// check loads patterns and every dependency from source for goos/goarch, type-checks them all
// and prints each error; it returns how many there were.
func check(ctx context.Context, dir, goos, goarch string, patterns []string, out io.Writer) (int, error) {
	cfg := &packages.Config{
		Context: ctx,
		Dir:     dir,
		Mode:    packages.LoadAllSyntax,
		Env:     append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
	}
	fmt.Fprintf(out, "GOOS=%s GOARCH=%s CGO_ENABLED=0: type-checking %s and their dependencies\n", goos, goarch, strings.Join(patterns, " "))
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return 0, err
	}
	errs, checked := 0, 0
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		checked++
		for _, e := range p.Errors {
			fmt.Fprintf(out, "%s/%s: %s\n", goos, goarch, e)
			errs++
		}
	})
	fmt.Fprintf(out, "GOOS=%s GOARCH=%s: %d packages, %d errors\n", goos, goarch, checked, errs)
	return errs, nil
}
