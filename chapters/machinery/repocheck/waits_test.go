package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// staleMessages finds testify waits (Eventually, EventuallyWithT, Never) whose failure message
// cannot say what the wait last saw: an argument the condition assigns (r, output) or reads
// through a call (out.String()) is evaluated once, when the wait begins — its zero value or
// the first answer, never the last. A pointer (&r, &out: fmt formats it when the wait gives up)
// or EventuallyWithT's own assertions say what it last saw.
func staleMessages(fset *token.FileSet, file *ast.File) []int {
	var lines []int
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || (pkg.Name != "require" && pkg.Name != "assert") {
			return true
		}
		switch sel.Sel.Name {
		case "Eventually", "EventuallyWithT", "Never", "Eventuallyf", "EventuallyWithTf", "Neverf":
		default:
			return true
		}
		if len(call.Args) < 5 {
			return true
		}
		cond, ok := call.Args[1].(*ast.FuncLit)
		if !ok {
			return true
		}
		assigned, read := map[string]bool{}, map[string]bool{}
		ast.Inspect(cond.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == token.ASSIGN {
					for _, lhs := range n.Lhs {
						if id, ok := lhs.(*ast.Ident); ok {
							assigned[id.Name] = true
						}
					}
				}
			case *ast.Ident:
				read[n.Name] = true
			}
			return true
		})
		for _, arg := range call.Args[5:] {
			stale := false
			switch a := arg.(type) {
			case *ast.Ident:
				stale = assigned[a.Name]
			case *ast.SelectorExpr: // r.Err
				id, ok := a.X.(*ast.Ident)
				stale = ok && assigned[id.Name]
			case *ast.CallExpr: // out.String()
				if s, ok := a.Fun.(*ast.SelectorExpr); ok {
					id, ok := s.X.(*ast.Ident)
					stale = ok && read[id.Name]
				}
			}
			if stale {
				lines = append(lines, fset.Position(arg.Pos()).Line)
			}
		}
		return true
	})
	return lines
}

// minWait is the least a wait may give its condition: a wait costs nothing once its condition
// holds, and two loaded cores (a cold build beside the tests) take seconds for what takes
// milliseconds on an idle machine.
const minWait = 10 * time.Second

// shortWaits finds waits (testify's Eventually and EventuallyWithT, wait.PollUntilContextTimeout)
// whose deadline is a constant shorter than minWait.
func shortWaits(fset *token.FileSet, file *ast.File) []int {
	var lines []int
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		var deadline ast.Expr
		switch {
		case (pkg.Name == "require" || pkg.Name == "assert") && (sel.Sel.Name == "Eventually" || sel.Sel.Name == "EventuallyWithT") && len(call.Args) >= 3:
			deadline = call.Args[2]
		case pkg.Name == "wait" && sel.Sel.Name == "PollUntilContextTimeout" && len(call.Args) >= 3:
			deadline = call.Args[2]
		default:
			return true
		}
		if d, ok := constantDuration(deadline); ok && d < minWait {
			lines = append(lines, fset.Position(deadline.Pos()).Line)
		}
		return true
	})
	return lines
}

// constantDuration evaluates time.Second, 5*time.Second, time.Minute/2 and the like.
func constantDuration(e ast.Expr) (time.Duration, bool) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return constantDuration(e.X)
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "time" {
			d, ok := map[string]time.Duration{"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond,
				"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}[e.Sel.Name]
			return d, ok
		}
	case *ast.BasicLit:
		if e.Kind == token.INT {
			n, err := strconv.ParseInt(e.Value, 0, 64)
			return time.Duration(n), err == nil
		}
	case *ast.BinaryExpr:
		x, okx := constantDuration(e.X)
		y, oky := constantDuration(e.Y)
		if !okx || !oky {
			return 0, false
		}
		switch e.Op {
		case token.MUL:
			return x * y, true
		case token.QUO:
			if y != 0 {
				return x / y, true
			}
		case token.ADD:
			return x + y, true
		}
	}
	return 0, false
}

func TestShortWaits(t *testing.T) {
	tests := []struct {
		name, body string
		want       []int
	}{
		{"five seconds", "\trequire.Eventually(t, func() bool { return ok() }, 5*time.Second, time.Millisecond)", []int{3}},
		{"half a second, with a message", "\tassert.EventuallyWithT(t, func(c *assert.CollectT) {}, 500*time.Millisecond, 10*time.Millisecond, \"x\")", []int{3}},
		{"a poll of a second", "\t_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Second, true, cond)", []int{3}},
		{"thirty seconds", "\trequire.Eventually(t, func() bool { return ok() }, 30*time.Second, time.Millisecond)", nil},
		{"a minute over two", "\trequire.Eventually(t, func() bool { return ok() }, time.Minute/2, time.Millisecond)", nil},
		{"a variable: not judged here", "\trequire.Eventually(t, func() bool { return ok() }, patience, time.Millisecond)", nil},
		{"ten seconds", "\trequire.Eventually(t, func() bool { return ok() }, 10*time.Second, time.Millisecond)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, "x_test.go", "package x\nfunc TestA(t *testing.T) {\n"+tt.body+"\n}\n", parser.SkipObjectResolution)
			require.NoError(t, err)
			assert.Equal(t, tt.want, shortWaits(fset, file))
		})
	}
}

func TestStaleMessages(t *testing.T) {
	wrap := func(body string) string {
		return "package x\nfunc TestA(t *testing.T) {\n" + body + "\n}\n"
	}
	tests := []struct {
		name, body string
		want       []int
	}{
		{"a variable the condition assigns", "\tvar r result\n\trequire.Eventually(t, func() bool { r = get(); return r.ok }, time.Minute, time.Second,\n\t\t\"%s\", r)", []int{5}},
		{"its field", "\trequire.Eventually(t, func() bool { r = get(); return r.ok }, time.Minute, time.Second, \"%v\", r.Err)", []int{3}},
		{"a buffer read through a call", "\tassert.Eventually(t, func() bool { return strings.Contains(out.String(), \"x\") }, time.Minute, time.Second, \"%s\", out.String())", []int{3}},
		{"a pointer is formatted when the wait gives up", "\trequire.Eventually(t, func() bool { r = get(); return r.ok }, time.Minute, time.Second, \"%s\", &r)", nil},
		{"what the condition does not touch", "\trequire.Eventually(t, func() bool { return ok(name) }, time.Minute, time.Second, \"%s %s\", name, other.String())", nil},
		{"a variable of the condition's own", "\trequire.Eventually(t, func() bool { r := get(); return r.ok }, time.Minute, time.Second, \"%s\", r)", nil},
		{"no message", "\trequire.Eventually(t, func() bool { r = get(); return r.ok }, time.Minute, time.Second)", nil},
		{"EventuallyWithT too", "\trequire.EventuallyWithT(t, func(c *assert.CollectT) { got = get() }, time.Minute, time.Second, \"%v\", got)", []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, "x_test.go", wrap(tt.body), parser.SkipObjectResolution)
			require.NoError(t, err)
			assert.Equal(t, tt.want, staleMessages(fset, file))
		})
	}
}

// TestWaitsSayWhatTheyLastSaw holds every wait in the repository's tests to a failure message
// that says what it last saw, not what it saw when it began, and to a deadline of minWait at
// least.
func TestWaitsSayWhatTheyLastSaw(t *testing.T) {
	root := ".."
	var stale, short []string
	err := walkGoFiles(root, parser.SkipObjectResolution, tests, func(f goFile) error {
		for _, line := range staleMessages(f.fset, f.file) {
			stale = append(stale, f.rel+":"+strconv.Itoa(line))
		}
		for _, line := range shortWaits(f.fset, f.file) {
			short = append(short, f.rel+":"+strconv.Itoa(line))
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(stale)
	assert.Empty(t, stale, "a wait's message formatted when the wait began, not when it gave up: pass a pointer (&r, &out) or use EventuallyWithT's assertions")
	sort.Strings(short)
	assert.Empty(t, short, "a wait's deadline shorter than %s: it costs nothing once the condition holds, and a loaded machine needs it", minWait)
}
