package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/notescheck"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// A look at the next release, in five steps, each written into the report, none stopping the
// next: the next release's go.mod and Go version; a copy of the repository (the files git tracks
// or would) whose go.mod requires that release, with its staging modules' replace lines moved
// and `go mod tidy -e` run; go build and go vet of each part; the chapters' README runs (the
// chapters that need the lab excepted), their samples saying the next release's version; and
// every citation, checked against the next release and, when broken, located there. The copy is
// removed at the end (--keep keeps it); the pinned module is never written.

type options struct {
	next    string // the kubernetes tag to look at
	root    string // the repository
	report  string // the report's path
	named   bool   // whether the reader named the report (then it must not exist)
	readmes bool
	keep    bool
	timeout time.Duration // of the README runs
	out     io.Writer
}

func newCommand(ctx context.Context) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "nextrelease --k8s TAG",
		Short: "Build every chapter against another kubernetes release in a copy of the module, run the READMEs, check the citations: one report",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			o.named = cmd.Flags().Changed("report")
			if err := o.complete(cmd.Context()); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
		SilenceUsage: true,
	}
	cmd.SetContext(ctx)
	cmd.Flags().StringVar(&o.next, "k8s", "", "the kubernetes release to look at, a tag the module proxy serves (v1.38.0-beta.0)")
	cmd.Flags().StringVar(&o.root, "root", "", "the repository (default: the module of the working directory)")
	cmd.Flags().StringVar(&o.report, "report", "", "where to write the report (default: .bin/next/TAG.md in the repository, replaced on each run)")
	cmd.Flags().BoolVar(&o.readmes, "readmes", true, "run the READMEs of the chapters that need no lab")
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the copy of the repository, and say where it is")
	cmd.Flags().DurationVar(&o.timeout, "readme-timeout", 60*time.Minute, "how long the README runs may take")
	return cmd
}

// complete finds the repository, when --root does not name it, as the module of the working
// directory (none: validate says so), and the report's default path in it.
func (o *options) complete(ctx context.Context) error {
	if o.root == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
		if err != nil {
			return fmt.Errorf("go env GOMOD: %w", err)
		}
		if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull {
			o.root = filepath.Dir(gomod)
		}
	}
	if o.report == "" && o.root != "" {
		o.report = filepath.Join(o.root, ".bin", "next", o.next+".md")
	}
	return nil
}

// tag is a kubernetes release tag: v1.38.0, v1.38.0-beta.0, v1.38.0-rc.1.
var tag = regexp.MustCompile(`^v1\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?$`)

func (o *options) validate() error {
	if !tag.MatchString(o.next) {
		return fmt.Errorf("--k8s %q: want a kubernetes release tag, such as v1.38.0 or v1.38.0-beta.0", o.next)
	}
	if o.root == "" {
		return fmt.Errorf("--root: the working directory is in no module; run from the repository or name it")
	}
	if _, err := os.Stat(filepath.Join(o.root, "go.mod")); err != nil {
		return fmt.Errorf("--root %s: %w", o.root, err)
	}
	if o.named {
		return program.Absent("--report", o.report)
	}
	return nil
}

func (o *options) run(ctx context.Context) error {
	r := &report{next: o.next, local: runtime.Version()}
	step := func(format string, args ...any) { fmt.Fprintf(o.out, format+"\n", args...) }

	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	list.Dir = o.root
	pinned, err := list.Output()
	if err != nil {
		return fmt.Errorf("the pinned kubernetes (go list -m k8s.io/kubernetes in %s): %w", o.root, err)
	}
	r.pinned = strings.TrimSpace(string(pinned))
	if r.pinned == o.next {
		return fmt.Errorf("--k8s %s is the pinned release already", o.next)
	}

	step("k8s.io/kubernetes %s: its go.mod and Go version", o.next)
	src := notescheck.NewSource(r.pinned, o.next)
	nextMod, err := readFrom(src, "go.mod")
	if err != nil {
		return fmt.Errorf("k8s.io/kubernetes %s: %w", o.next, err)
	}
	kubernetes, err := modfile.Parse("go.mod", nextMod, nil)
	if err != nil {
		return fmt.Errorf("k8s.io/kubernetes %s's go.mod: %w", o.next, err)
	}
	goVersion, _ := readFrom(src, ".go-version")
	r.goVersion = strings.TrimSpace(string(goVersion))
	if kubernetes.Go != nil {
		r.goLine = kubernetes.Go.Version
	}
	r.toolchain = toolchain(kubernetes, r.goVersion, r.local)

	tree, err := os.MkdirTemp("", "nextrelease-")
	if err != nil {
		return err
	}
	if o.keep {
		defer step("The copy stays in %s.", tree)
	} else {
		defer func() { _ = os.RemoveAll(tree) }()
	}
	step("A copy of the repository in %s, its go.mod moved to %s", tree, o.next)
	if err := copyTree(ctx, o.root, tree); err != nil {
		return err
	}
	goMod, err := os.ReadFile(filepath.Join(tree, "go.mod"))
	if err != nil {
		return err
	}
	moved, changes, err := retarget(goMod, kubernetes, o.next)
	if err != nil {
		return fmt.Errorf("go.mod: %w", err)
	}
	r.modChanges = changes
	if err := os.WriteFile(filepath.Join(tree, "go.mod"), moved, 0o644); err != nil {
		return err
	}
	g := &goCommand{dir: tree, env: environ(r.toolchain)}
	step("go mod tidy -e with GOTOOLCHAIN=%s (it downloads what the release needs)", r.toolchain)
	if r.tidy, r.tidyOK, err = g.run(ctx, "mod", "tidy", "-e"); err != nil {
		return err
	}

	if r.units, err = units(tree); err != nil {
		return err
	}
	for _, u := range r.units {
		step("go build and go vet ./%s/...", u.dir)
		if err := u.compile(ctx, g); err != nil {
			return err
		}
	}

	if err := o.runREADMEs(ctx, r, g, tree); err != nil {
		return err
	}

	step("The citations, against %s", o.next)
	var form []error
	r.checked, r.broken, form = citations(o.root, r.pinned, o.next)
	r.citationsOfForm = form

	var buf bytes.Buffer
	if err := r.write(&buf); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.report), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.report, buf.Bytes(), 0o644); err != nil {
		return err
	}
	step("The report: %s", o.report)
	return nil
}

// runREADMEs runs the README runner in the copy on the chapters that need no lab.
func (o *options) runREADMEs(ctx context.Context, r *report, g *goCommand, tree string) error {
	if !o.readmes {
		r.readmesSkipped = "--readmes=false"
		return nil
	}
	chapters, err := readmeChapters(tree)
	if err != nil {
		return err
	}
	for _, c := range chapters {
		if err := retagSamples(filepath.Join(tree, "chapters", c, "README.md"), r.pinned, o.next); err != nil {
			return err
		}
	}
	r.readmeChapters = chapters
	fmt.Fprintf(o.out, "The READMEs of %s, their samples saying %s\n", strings.Join(chapters, ", "), o.next)
	stream, _, err := g.run(ctx, "test", "-count=1", "-json", "-timeout", o.timeout.String(),
		"-run", runPattern(chapters), "./chapters/machinery/repocheck/")
	if err != nil {
		return err
	}
	r.chapterResults, r.failedCommands, r.readmeOther = readmeResults(stream)
	return nil
}

// readFrom reads a file of the kubernetes module src reads.
func readFrom(src *notescheck.Source, name string) ([]byte, error) {
	file, err := src.File(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(file)
}
