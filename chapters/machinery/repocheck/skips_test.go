package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notTiers are the skips that are not a tier's, by file and function, each with why a skip is
// right there under CI=true too. Every other skip goes through chapters/machinery/testsupport/tier, which
// fails under CI=true what CI promises to run (tier.Require, tier.Unavailable, tier.Long for
// -short): a bare t.Skip would turn "could not run" into a pass there.
var notTiers = map[string]string{
	"examples/workshop/12-toy-remove/remove_test.go TestRemove": "the exercise's test fails until an attendee solves it; " +
		"its checker runs it with WORKSHOP_EXERCISE=1 and fails on a skip (examples/workshop/checks/coding.go)",
	"examples/workshop/13-toy-namespace-filter/filter_test.go TestNamespaceFilter": "the exercise's test fails until an attendee solves it; " +
		"its checker runs it with WORKSHOP_EXERCISE=1 and fails on a skip (examples/workshop/checks/coding.go)",
	"chapters/machinery/repocheck/readme_test.go TestChapterREADMEs": "a sample for the other kind of host (cgroup v1 or v2): " +
		"compared in the run as that host, which CI makes (.ci/cgroup-v1, .ci/cgroup-v2)",
	"chapters/machinery/notescheck/drift_test.go notesSourceIn": "the sources tier is promised only where ../shared/sources is laid out " +
		"(the maintainers' CI); a fork's CI has no such directory, and the skip says how to get the text",
	"chapters/08-minicluster/minicluster/tb.go programTB.Skip":  "a testing.TB for a program, not a test: its SkipNow panics",
	"chapters/08-minicluster/minicluster/tb.go programTB.Skipf": "a testing.TB for a program, not a test: its SkipNow panics",
}

// skipCalls finds the calls of Skip, Skipf and SkipNow in a Go file, and of testing.Short (a
// test that returns on -short passes where it should skip, or fail under CI: tier.Long), as
// "FUNCTION" (or "TYPE.METHOD") → the lines they are on.
func skipCalls(fset *token.FileSet, file *ast.File) map[string][]int {
	found := map[string][]int{}
	for _, decl := range file.Decls {
		name := "package level"
		if fn, ok := decl.(*ast.FuncDecl); ok {
			name = fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				recv := fn.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					name = id.Name + "." + name
				}
			}
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				pkg, _ := sel.X.(*ast.Ident)
				switch {
				case sel.Sel.Name == "Skip", sel.Sel.Name == "Skipf", sel.Sel.Name == "SkipNow",
					sel.Sel.Name == "Short" && pkg != nil && pkg.Name == "testing":
					found[name] = append(found[name], fset.Position(call.Pos()).Line)
				}
			}
			return true
		})
	}
	return found
}

// TestSkipsGoThroughTier finds every Skip, Skipf and SkipNow in the repository's Go code outside
// the tier package: each must be one of notTiers, and each of notTiers must still be there.
func TestSkipsGoThroughTier(t *testing.T) {
	root := ".."
	seen := map[string]bool{}
	var bare []string
	// chapters/machinery/testsupport/tier is the one place that may skip.
	notTier := func(rel string) bool { return rel != "chapters/machinery/testsupport/tier/" }
	err := walkGoFiles(root, parser.SkipObjectResolution, notTier, func(f goFile) error {
		for fn, lines := range skipCalls(f.fset, f.file) {
			key := f.rel + " " + fn
			if _, ok := notTiers[key]; ok {
				seen[key] = true
				continue
			}
			for _, line := range lines {
				bare = append(bare, f.rel+":"+strconv.Itoa(line)+" ("+fn+")")
			}
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(bare)
	assert.Empty(t, bare, "a skip (or testing.Short) outside chapters/machinery/testsupport/tier: use tier.Require, tier.Unavailable or tier.Long, "+
		"which fail under CI=true what CI promises; a skip that is not a tier's goes in notTiers, saying why")
	for key := range notTiers {
		assert.True(t, seen[key], "notTiers lists %q, which no longer skips: remove it", key)
	}
}
