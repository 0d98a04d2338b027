package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
)

// notSideBySide are benchmarks with sub-benchmarks that compare nothing, each with its reason.
// None today: every one puts two variants of one thing side by side.
var notSideBySide = map[string]string{}

// ratio is one ratio a benchmark function reports: its name and the ratio's unit without "x-"
// ("requests:before/after"), what the note's goals are looked up by.
type ratio struct{ benchmark, unit string }

// sideBySideProblems returns the benchmarks of one test file that run sub-benchmarks (b.Run) —
// two variants of one thing side by side — without reporting their ratio through package
// benchratio (a benchratio.Sides and its Report), so that nobody has to divide by hand; and
// those that report a ratio without it. It also returns the ratios the file's benchmarks report,
// read from each Report call and its Sides (whose Of, and the sides' labels, must be string
// literals to be read), and, for a ratio of something else than time (Of), a problem where no
// b.ReportMetric of the function reports each side's value under a unit holding Of, where
// make bench's summary reads each side's runs.
func sideBySideProblems(filename string, src []byte) ([]string, []ratio, error) {
	file, err := parser.ParseFile(token.NewFileSet(), filename, src, 0)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	var ratios []ratio
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
		of := map[string]string{} // each benchratio.Sides variable's Of
		var metricUnits []string  // the units of the function's b.ReportMetric calls
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec: // var sides benchratio.Sides
				if isSides(n.Type) {
					for _, name := range n.Names {
						of[name.Name] = ""
					}
				}
			case *ast.AssignStmt: // sides := benchratio.Sides{Of: "requests"}
				for i, rhs := range n.Rhs {
					if lit, ok := rhs.(*ast.CompositeLit); ok && isSides(lit.Type) && i < len(n.Lhs) {
						if id, ok := n.Lhs[i].(*ast.Ident); ok {
							of[id.Name] = sidesOf(lit)
						}
					}
				}
			case *ast.CallExpr:
				if byHand(n) {
					problems = append(problems, filename+": "+fn.Name.Name+" reports a ratio (an x- metric) by hand; a ratio is a measurement over a measurement of the same run: benchratio.Sides")
				}
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					break
				}
				if sel.Sel.Name == "ReportMetric" && len(n.Args) == 2 {
					if unit, ok := stringLit(n.Args[1]); ok {
						metricUnits = append(metricUnits, unit)
					}
				}
				recv, _ := sel.X.(*ast.Ident)
				if sel.Sel.Name != "Report" || recv == nil || len(n.Args) != 3 {
					break
				}
				o, known := of[recv.Name]
				num, okNum := stringLit(n.Args[1])
				den, okDen := stringLit(n.Args[2])
				if !known || !okNum || !okDen {
					problems = append(problems, filename+": "+fn.Name.Name+" reports a ratio whose sides this check cannot read (a benchratio.Sides declared in the function, string literals for its labels): it cannot look up its goal")
					break
				}
				unit := num + "/" + den
				if o != "" {
					unit = o + ":" + unit
				}
				if r := (ratio{fn.Name.Name, unit}); !slices.Contains(ratios, r) {
					ratios = append(ratios, r)
				}
			case *ast.SelectorExpr:
				x, _ := n.X.(*ast.Ident)
				switch {
				case x != nil && x.Name == b && n.Sel.Name == "Run":
					subs = true
				case x != nil && x.Name == "benchratio" && n.Sel.Name == "Sides":
					sides = true
				case n.Sel.Name == "Report":
					reports = true
				}
			}
			return true
		})
		if subs && !(sides && reports) && notSideBySide[fn.Name.Name] == "" {
			problems = append(problems, filename+": "+fn.Name.Name+" runs sub-benchmarks side by side but reports no ratio (benchratio.Sides, then Report)")
		}
		for _, o := range of {
			if o == "" {
				continue
			}
			word := regexp.MustCompile(`(^|[^A-Za-z0-9])` + regexp.QuoteMeta(o) + `($|[^A-Za-z0-9])`)
			if !slices.ContainsFunc(metricUnits, func(u string) bool { return !strings.HasPrefix(u, "x-") && word.MatchString(u) }) {
				problems = append(problems, filename+": "+fn.Name.Name+" compares "+o+" but reports no metric whose unit holds it (b.ReportMetric(v, \"…"+o+"…\")): the summary cannot read each side's runs")
			}
		}
	}
	return problems, ratios, nil
}

// isSides says whether a type expression is benchratio.Sides.
func isSides(expr ast.Expr) bool {
	sel, ok := expr.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "benchratio" && sel.Sel.Name == "Sides"
}

// sidesOf is the Of of a benchratio.Sides literal ("" when not set, or not a string literal).
func sidesOf(lit *ast.CompositeLit) string {
	for _, elt := range lit.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "Of" {
				s, _ := stringLit(kv.Value)
				return s
			}
		}
	}
	return ""
}

// stringLit is the value of a string literal.
func stringLit(expr ast.Expr) (string, bool) {
	lit, ok := expr.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
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
// ratio with b.ReportMetric (through benchratio), which make bench's summary reads, and every
// ratio reported to having a goal in notes/measurements.md, which the summary judges it by.
func TestSideBySideBenchmarksReportRatios(t *testing.T) {
	note, err := os.ReadFile("../notes/measurements.md")
	require.NoError(t, err)
	goals, err := benchratio.ParseGoals(string(note))
	require.NoError(t, err)
	var problems []string
	var ratios []ratio
	benchmarks := 0
	err = walkGoFiles("..", 0, tests, func(f goFile) error {
		benchmarks += strings.Count(string(f.src), "\nfunc Benchmark")
		p, r, err := sideBySideProblems(f.rel, f.src)
		problems = append(problems, p...)
		ratios = append(ratios, r...)
		return err
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, benchmarks, 7, "the walk found the repository's benchmarks")
	require.GreaterOrEqual(t, len(ratios), 8, "the walk found the ratios the benchmarks report")
	assert.Empty(t, problems)
	assert.Empty(t, withoutGoal(ratios, goals), "side-by-side ratios without a goal in notes/measurements.md (a row naming the benchmark and its x- unit that says \"goal ≤ N×\")")
}

// withoutGoal lists the ratios no goal covers.
func withoutGoal(ratios []ratio, goals benchratio.Goals) []string {
	var missing []string
	for _, r := range ratios {
		if !goals.Covers(r.benchmark, r.unit) {
			missing = append(missing, r.benchmark+" x-"+r.unit)
		}
	}
	return missing
}

// A ratio without a goal is found, with its unit; one the note covers, for every unit or for its
// own, is not.
func TestWithoutGoal(t *testing.T) {
	goals, err := benchratio.ParseGoals("| `BenchmarkA` | goal ≤ 1.1× |\n| `BenchmarkB/n=1`, `x-requests:before/after` | goal ≥ 2× |\n")
	require.NoError(t, err)
	assert.Equal(t, []string{"BenchmarkB x-before/after", "BenchmarkC x-toy/real"}, withoutGoal([]ratio{
		{"BenchmarkA", "toy/real"}, {"BenchmarkB", "requests:before/after"}, {"BenchmarkB", "before/after"}, {"BenchmarkC", "toy/real"},
	}, goals))
}

func TestSideBySideProblems(t *testing.T) {
	tests := []struct {
		name, src string
		want      int
		ratios    []ratio
	}{
		{"two sides, a ratio", `package p
func BenchmarkX(b *testing.B) {
	var sides benchratio.Sides
	for _, s := range []string{"toy", "real"} {
		b.Run(s, func(b *testing.B) { sides.Time(b, s); sides.Report(b, "toy", "real") })
	}
}`, 0, []ratio{{"BenchmarkX", "toy/real"}}},
		{"a time and a count, as BenchmarkDiscovery reports them", `package p
func BenchmarkD(b *testing.B) {
	for _, n := range []int{1, 10} {
		var times benchratio.Sides
		requests := benchratio.Sides{Of: "requests"}
		b.Run("before", func(b *testing.B) { b.ReportMetric(2, "apiserver-requests/poll"); times.Time(b, "before"); requests.Set("before", 2) })
		b.Run("after", func(b *testing.B) {
			b.ReportMetric(1, "apiserver-requests/poll")
			times.Time(b, "after")
			times.Report(b, "before", "after")
			requests.Set("after", 1)
			requests.Report(b, "before", "after")
		})
	}
}`, 0, []ratio{{"BenchmarkD", "before/after"}, {"BenchmarkD", "requests:before/after"}}},
		{"a count whose sides report no metric of it", `package p
func BenchmarkD(b *testing.B) {
	requests := benchratio.Sides{Of: "requests"}
	b.Run("before", func(b *testing.B) { b.ReportMetric(2, "reqs/poll"); requests.Set("before", 2) })
	b.Run("after", func(b *testing.B) { b.ReportMetric(1, "calls/poll"); requests.Set("after", 1); requests.Report(b, "before", "after") })
}`, 1, []ratio{{"BenchmarkD", "requests:before/after"}}},
		{"sides this check cannot read", `package p
func BenchmarkX(b *testing.B) {
	var sides benchratio.Sides
	num := "toy"
	b.Run("toy", func(b *testing.B) { sides.Time(b, "toy") })
	b.Run("real", func(b *testing.B) { sides.Time(b, "real"); sides.Report(b, num, "real") })
}`, 1, nil},
		{"two sides, no ratio", `package p
func BenchmarkX(b *testing.B) {
	b.Run("toy", func(b *testing.B) {})
	b.Run("real", func(b *testing.B) {})
}`, 1, nil},
		{"a ratio divided by hand", `package p
func BenchmarkX(b *testing.B) {
	b.Run("toy", func(b *testing.B) {})
	b.Run("real", func(b *testing.B) { b.ReportMetric(60/b.Elapsed().Seconds(), "x-speed") })
}`, 2, nil},
		{"a ratio to a constant, as the old BenchmarkNodeStart made it", `package p
const minikubeStart = 60 * time.Second
func BenchmarkNodeStart(b *testing.B) {
	var ready time.Duration
	for b.Loop() {}
	b.ReportMetric(ready.Seconds()/float64(b.N), "s-to-ready")
	b.ReportMetric(minikubeStart.Seconds()/(ready.Seconds()/float64(b.N)), "x-minikube-speed")
}`, 1, nil},
		{"no sub-benchmarks", `package p
func BenchmarkX(bench *testing.B) {
	for bench.Loop() {}
}`, 0, nil},
		{"a sub-benchmark's own Run is not the benchmark's", `package p
func BenchmarkX(b *testing.B) {
	var c client
	c.Run()
}`, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, ratios, err := sideBySideProblems("x_test.go", []byte(tt.src))
			require.NoError(t, err)
			assert.Len(t, problems, tt.want, "%v", problems)
			assert.Equal(t, tt.ratios, ratios)
		})
	}
}

// TestMakeBenchSummarizes: make bench runs each benchmark several times (a goal is judged only
// on the spread of repeated runs), keeps go test's output, and ends with benchsummary's table of
// the ratios against notes/measurements.md.
func TestMakeBenchSummarizes(t *testing.T) {
	makefile, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	_, recipe, found := strings.Cut(string(makefile), "\nbench:")
	require.True(t, found, "the Makefile has a bench target")
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	assert.Regexp(t, `\$\(GO\) test .*-bench '\$\(BENCH\)'.* -count \$\(BENCH_COUNT\) .*\| tee \$\(BIN\)/bench\.txt\n`, recipe)
	assert.Regexp(t, `(?m)^bench: BENCH_COUNT \?= ([6-9]|[1-9][0-9])$`, string(makefile), "six runs of each side at least: the fewest with a 95 % interval")
	assert.Regexp(t, `\$\(GO\) run \./chapters/machinery/testsupport/benchratio/benchsummary --goals notes/measurements\.md \$\(BIN\)/bench\.txt`, recipe)
}
