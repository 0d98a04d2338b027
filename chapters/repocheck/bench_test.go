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

// notSideBySide are benchmarks with sub-benchmarks that compare nothing, each with its reason.
// None today: every one puts two variants of one thing side by side.
var notSideBySide = map[string]string{}

// sideBySideProblems returns the benchmarks of one test file that run sub-benchmarks (b.Run) —
// two variants of one thing side by side — without reporting their ratio through package
// benchratio (a benchratio.Sides and its Report), so that nobody has to divide by hand; and
// those that report a ratio without it.
func sideBySideProblems(filename string, src []byte) ([]string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), filename, src, 0)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Benchmark") || fn.Type.Params.NumFields() != 1 {
			continue
		}
		if len(fn.Type.Params.List[0].Names) == 0 {
			continue
		}
		b := fn.Type.Params.List[0].Names[0].Name
		subs, sides, reports := false, false, false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && byHand(call) {
				problems = append(problems, filename+": "+fn.Name.Name+" reports a ratio (an x- metric) by hand; a ratio is a measurement over a measurement of the same run: benchratio.Sides")
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, _ := sel.X.(*ast.Ident)
			switch {
			case x != nil && x.Name == b && sel.Sel.Name == "Run":
				subs = true
			case x != nil && x.Name == "benchratio" && sel.Sel.Name == "Sides":
				sides = true
			case sel.Sel.Name == "Report":
				reports = true
			}
			return true
		})
		if subs && !(sides && reports) && notSideBySide[fn.Name.Name] == "" {
			problems = append(problems, filename+": "+fn.Name.Name+" runs sub-benchmarks side by side but reports no ratio (benchratio.Sides, then Report)")
		}
	}
	return problems, nil
}

// byHand says whether a call is b.ReportMetric(…, "x-…"): a ratio's unit written out, its
// division done by hand — the way a ratio to a constant is made. Only benchratio.Sides reports
// ratios, and it divides one side's measurement by the other's.
func byHand(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "ReportMetric" || len(call.Args) != 2 {
		return false
	}
	unit, ok := call.Args[1].(*ast.BasicLit)
	return ok && unit.Kind == token.STRING && strings.HasPrefix(strings.Trim(unit.Value, "`\""), "x-")
}

// TestSideBySideBenchmarksReportRatios holds every benchmark of the repository to reporting its
// ratio with b.ReportMetric (through benchratio), which make bench's summary reads.
func TestSideBySideBenchmarksReportRatios(t *testing.T) {
	var problems []string
	benchmarks := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		benchmarks += strings.Count(string(src), "\nfunc Benchmark")
		p, err := sideBySideProblems(path, src)
		problems = append(problems, p...)
		return err
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, benchmarks, 7, "the walk found the repository's benchmarks")
	assert.Empty(t, problems)
}

func TestSideBySideProblems(t *testing.T) {
	tests := []struct {
		name, src string
		want      int
	}{
		{"two sides, a ratio", `package p
func BenchmarkX(b *testing.B) {
	var sides benchratio.Sides
	for _, s := range []string{"toy", "real"} {
		b.Run(s, func(b *testing.B) { sides.Time(b, s); sides.Report(b, "toy", "real") })
	}
}`, 0},
		{"two sides, no ratio", `package p
func BenchmarkX(b *testing.B) {
	b.Run("toy", func(b *testing.B) {})
	b.Run("real", func(b *testing.B) {})
}`, 1},
		{"a ratio divided by hand", `package p
func BenchmarkX(b *testing.B) {
	b.Run("toy", func(b *testing.B) {})
	b.Run("real", func(b *testing.B) { b.ReportMetric(60/b.Elapsed().Seconds(), "x-speed") })
}`, 2},
		{"a ratio to a constant, as the old BenchmarkNodeStart made it", `package p
const minikubeStart = 60 * time.Second
func BenchmarkNodeStart(b *testing.B) {
	var ready time.Duration
	for b.Loop() {}
	b.ReportMetric(ready.Seconds()/float64(b.N), "s-to-ready")
	b.ReportMetric(minikubeStart.Seconds()/(ready.Seconds()/float64(b.N)), "x-minikube-speed")
}`, 1},
		{"no sub-benchmarks", `package p
func BenchmarkX(bench *testing.B) {
	for bench.Loop() {}
}`, 0},
		{"a sub-benchmark's own Run is not the benchmark's", `package p
func BenchmarkX(b *testing.B) {
	var c client
	c.Run()
}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, err := sideBySideProblems("x_test.go", []byte(tt.src))
			require.NoError(t, err)
			assert.Len(t, problems, tt.want, "%v", problems)
		})
	}
}

// TestMakeBenchSummarizes: make bench keeps go test's output and ends with benchsummary's table
// of the ratios against notes/measurements.md.
func TestMakeBenchSummarizes(t *testing.T) {
	makefile, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	_, recipe, found := strings.Cut(string(makefile), "\nbench:")
	require.True(t, found, "the Makefile has a bench target")
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	assert.Regexp(t, `\$\(GO\) test .*-bench '\$\(BENCH\)'.* \| tee \$\(BIN\)/bench\.txt\n`, recipe)
	assert.Regexp(t, `\$\(GO\) run \./chapters/testsupport/benchratio/benchsummary --goals notes/measurements\.md \$\(BIN\)/bench\.txt`, recipe)
}
