// Package repo finds the repository's root from a test, wherever go test runs it: tests name the
// repository's files (examples/static-pods, notes/…) from there, not by counting "../".
package repo

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Module is the repository's module path, the first line of its go.mod.
const Module = "github.com/kubelet-walkthrough/kubelet-walkthrough"

// Root returns the repository's root: the nearest directory, from the working directory up, whose
// go.mod declares Module (the tool modules under chapters declare others). It panics when there
// is none: a test run outside the repository cannot find its files.
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	root, err := find(dir)
	if err != nil {
		panic(err)
	}
	return root
}

// Path joins elem to the repository's root.
func Path(elem ...string) string {
	return filepath.Join(append([]string{Root()}, elem...)...)
}

func find(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if declares(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s in %s or above", Module, dir)
		}
	}
}

// declares says whether the go.mod at path declares Module.
func declares(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := strings.TrimSpace(s.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == Module
		}
	}
	return false
}

// MakeEnv is this process's environment without what a make running it passes to its children
// (MAKEFLAGS and the rest): a test runs make as a reader types it, not as a step of `make test`.
// A parent's --output-sync, inherited through MAKEFLAGS, would hold a serving program's output
// until it exits; its jobserver and command-line variables are the parent's own.
func MakeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		switch key {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR":
			continue
		}
		env = append(env, kv)
	}
	return env
}
