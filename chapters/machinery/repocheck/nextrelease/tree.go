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
	"strings"
)

// copyTree copies the repository at root into dst: the files git tracks and those it would
// track (not ignored), as they are in the working tree, symbolic links as links. Nothing under
// root is written.
func copyTree(ctx context.Context, root, dst string) error {
	list := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	for _, name := range bytes.Split(out, []byte{0}) {
		if len(name) == 0 {
			continue
		}
		if err := copyFile(filepath.Join(root, string(name)), filepath.Join(dst, string(name))); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	info, err := os.Lstat(from)
	if os.IsNotExist(err) {
		return nil // deleted in the working tree, not yet in git's index
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// textBlock is a README's sample output, as the README runner finds them (readme_test.go).
var textBlock = regexp.MustCompile("(?ms)^```text(?: [\\w-]+)?\n.*?^```\n")

// retagSamples makes the samples of a README name the kubernetes module at next where they name it
// at current ("k8s.io/kubernetes v1.37.2", "k8s.io/kubernetes@v1.37.2": what the chapters print
// of the module they were built with), so that a sample differs from the run on next only by what
// really changed. Other versions (a container image's tag) stay.
func retagSamples(readme, current, next string) error {
	data, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	r := strings.NewReplacer("k8s.io/kubernetes "+current, "k8s.io/kubernetes "+next, "k8s.io/kubernetes@"+current, "k8s.io/kubernetes@"+next)
	out := textBlock.ReplaceAllStringFunc(string(data), r.Replace)
	return os.WriteFile(readme, []byte(out), 0o644)
}
