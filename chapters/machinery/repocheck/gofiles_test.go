package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// goFile is one Go file of the repository, parsed: rel is its path from the walk's root, with
// slashes.
type goFile struct {
	rel  string
	src  []byte
	fset *token.FileSet
	file *ast.File
}

// walkGoFiles parses the Go files under root that want accepts (by their path from root), with
// mode, and calls fn with each. Hidden directories, testdata/ and vendor/ are not walked.
func walkGoFiles(root string, mode parser.Mode, want func(rel string) bool, fn func(goFile) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" || !want(rel+"/")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || !want(rel) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, rel, src, mode)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		return fn(goFile{rel: rel, src: src, fset: fset, file: file})
	})
}

// all accepts every Go file.
func all(string) bool { return true }
