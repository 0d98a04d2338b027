package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// unit is one part of the repository built and vetted on its own, so that the report says which
// part no longer compiles: a chapter (chapters/04-runkubelet/...), the machinery, the examples.
type unit struct {
	dir         string // from the tree's root: chapters/04-runkubelet
	build, vet  string // what go build and go vet printed
	built, vets bool   // whether each succeeded
}

// units are the tree's chapters in their order, then chapters/machinery and examples.
func units(tree string) ([]*unit, error) {
	chapters, err := filepath.Glob(filepath.Join(tree, "chapters", "[0-9][0-9]-*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(chapters)
	var out []*unit
	for _, c := range chapters {
		out = append(out, &unit{dir: filepath.Join("chapters", filepath.Base(c))})
	}
	for _, dir := range []string{filepath.Join("chapters", "machinery"), "examples"} {
		if _, err := os.Stat(filepath.Join(tree, dir)); err == nil {
			out = append(out, &unit{dir: dir})
		}
	}
	return out, nil
}

// compile runs go build and go vet (which type-checks the tests too) on the unit's packages.
func (u *unit) compile(ctx context.Context, g *goCommand) error {
	var err error
	if u.build, u.built, err = g.run(ctx, "build", "./"+u.dir+"/..."); err != nil {
		return err
	}
	u.vet, u.vets, err = g.run(ctx, "vet", "./"+u.dir+"/...")
	return err
}

// goCommand runs the go command in a tree with an environment of its own (the toolchain).
type goCommand struct {
	dir string
	env []string
}

// run runs go with args and returns what it printed, and whether it succeeded. The error is for
// a go command that could not run at all, or a context that ended.
func (g *goCommand) run(ctx context.Context, args ...string) (string, bool, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = g.dir
	cmd.Env = g.env
	out, err := cmd.CombinedOutput()
	out = downloads.ReplaceAll(out, nil)
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return string(out), false, ctx.Err()
	case errors.As(err, &exit):
		return string(out), false, nil
	case err != nil:
		return string(out), false, fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return string(out), true, nil
}

// downloads are the go command's lines about modules it fetches, which say nothing about the release.
var downloads = regexp.MustCompile(`(?m)^go: downloading .*\n`)

// environ is this process's environment with GOTOOLCHAIN set.
func environ(goToolchain string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOTOOLCHAIN=") {
			env = append(env, kv)
		}
	}
	return append(env, "GOTOOLCHAIN="+goToolchain)
}
