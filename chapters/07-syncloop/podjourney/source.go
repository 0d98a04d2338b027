package podjourney

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"sync"
)

// selectCase says which case of a select (and of a switch inside it) holds a line of a Go
// file, reading the kubelet's source as the binary recorded its path: for a frame in
// syncLoopIteration, which channel the sync loop took. It returns "" when the source is not
// there (a binary built with -trimpath, or moved to another machine).
func selectCase(frame Frame) string {
	file := sourceFile(frame.Abs)
	if file == nil {
		return ""
	}
	var clauses []string
	ast.Inspect(file.ast, func(n ast.Node) bool {
		if n == nil {
			return false
		}
		start, end := file.fset.Position(n.Pos()).Line, file.fset.Position(n.End()).Line
		if frame.Line < start || frame.Line > end {
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

// sourceText is the code on a frame's line, trimmed, cut so that its parentheses balance (a
// line that opens a call continued below keeps what comes before the open parenthesis). It is
// "" when the source is not there.
func sourceText(frame Frame) string {
	file := sourceFile(frame.Abs)
	if file == nil {
		return ""
	}
	lines := strings.Split(string(file.src), "\n")
	if frame.Line < 1 || frame.Line > len(lines) {
		return ""
	}
	return balanced(strings.TrimSpace(lines[frame.Line-1]))
}

// balanced cuts s before its first unmatched parenthesis.
func balanced(s string) string {
	var open []int
	for i, r := range s {
		switch r {
		case '(':
			open = append(open, i)
		case ')':
			if len(open) == 0 {
				return strings.TrimSpace(s[:i])
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return strings.TrimSpace(s[:open[0]])
	}
	return s
}
