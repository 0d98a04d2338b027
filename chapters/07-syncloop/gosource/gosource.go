// Package gosource reads Go source files as a binary recorded their paths (the module cache's):
// the text of a line, and which case of a select (and of a switch inside it) holds it — for a
// frame in the kubelet's syncLoopIteration, the channel the sync loop took. Chapter 07's journey
// names its steps with it, and the workshop's exercise 16 checks an attendee's answer against it.
package gosource

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"sync"
)

// SelectCase says which case of a select (and of a switch inside it) holds a line of a Go
// file: "case u, open := <-configCh → case kubetypes.ADD". It returns "" when the line is in
// no case, or when the source is not there (a binary built with -trimpath, or moved to another
// machine).
func SelectCase(path string, line int) string {
	file := sourceFile(path)
	if file == nil {
		return ""
	}
	var clauses []string
	ast.Inspect(file.ast, func(n ast.Node) bool {
		if n == nil {
			return false
		}
		start, end := file.fset.Position(n.Pos()).Line, file.fset.Position(n.End()).Line
		if line < start || line > end {
			return false
		}
		switch c := n.(type) {
		case *ast.CommClause:
			if c.Comm != nil {
				clauses = append(clauses, "case "+file.text(c.Comm))
			}
		case *ast.CaseClause:
			if len(c.List) > 0 {
				var list []string
				for _, e := range c.List {
					list = append(list, file.text(e))
				}
				clauses = append(clauses, "case "+strings.Join(list, ", "))
			}
		}
		return true
	})
	return strings.Join(clauses, " → ")
}

// Line is the text of a line of a Go file, as it is there; "" when the file or the line is not
// there.
func Line(path string, line int) string {
	file := sourceFile(path)
	if file == nil {
		return ""
	}
	lines := strings.Split(string(file.src), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	return lines[line-1]
}

type parsedFile struct {
	fset *token.FileSet
	ast  *ast.File
	src  []byte
}

func (f *parsedFile) text(n ast.Node) string {
	return string(f.src[f.fset.Position(n.Pos()).Offset:f.fset.Position(n.End()).Offset])
}

var (
	parsedMu sync.Mutex
	parsed   = map[string]*parsedFile{}
)

func sourceFile(path string) *parsedFile {
	parsedMu.Lock()
	defer parsedMu.Unlock()
	if f, ok := parsed[path]; ok {
		return f
	}
	var f *parsedFile
	if src, err := os.ReadFile(path); err == nil {
		fset := token.NewFileSet()
		if file, err := parser.ParseFile(fset, path, src, 0); err == nil {
			f = &parsedFile{fset: fset, ast: file, src: src}
		}
	}
	parsed[path] = f
	return f
}
