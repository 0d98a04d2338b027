package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxLessonFunc is how long a function of a lesson may be: the code a chapter sends readers to
// reads beside the kubelet function it mirrors (RunKubelet is 55 lines).
const maxLessonFunc = 90

// longFuncs lists the functions over max lines in the non-test Go files under dir.
func longFuncs(t *testing.T, dir string, max int) []string {
	t.Helper()
	fset := token.NewFileSet()
	var long []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > max {
					long = append(long, filepath.ToSlash(path)+": "+fn.Name.Name)
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	return long
}

// TestLessonFunctionsAreShort: no function of a chapter (its command and the package it
// introduces), nor of the support code the chapters run and send readers to (the pod table, the
// kubelet's log reader, …), is over maxLessonFunc lines.
func TestLessonFunctionsAreShort(t *testing.T) {
	chapters, err := filepath.Glob("[0-9][0-9]-*")
	require.NoError(t, err)
	require.NotEmpty(t, chapters)
	for _, dir := range append(chapters, filepath.Join("machinery", "support")) {
		assert.Empty(t, longFuncs(t, dir, maxLessonFunc), "functions over %d lines: split them as the kubelet splits its own", maxLessonFunc)
	}
}

func TestLongFuncsFindsOne(t *testing.T) {
	dir := t.TempDir()
	body := "package x\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", 10) + "}\n\nfunc short() {}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.go"), []byte(body), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(body), 0o644))
	assert.Equal(t, []string{filepath.ToSlash(filepath.Join(dir, "x.go")) + ": long"}, longFuncs(t, dir, 5))
}
