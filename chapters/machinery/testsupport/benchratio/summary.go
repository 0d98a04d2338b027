package benchratio

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Ratio is one ratio a side-by-side benchmark reported, with each side's runs (-count).
type Ratio struct {
	// Benchmark is the name of the comparison: the reporting line's name without go test's
	// GOMAXPROCS suffix and, when it is one of the two sides, without that side's sub-benchmark
	// ("BenchmarkLoadManifests/manifests=100", from ".../manifests=100/real-2").
	Benchmark string
	// Unit is the metric's unit without the "x-": "toy/real", "requests:before/after".
	Unit string
	// Values are the ratios the benchmark reported, one per run of its reporting side.
	Values []float64
	// Num and Den are what each side measured, one value per run in the order run: its ns/op
	// or, for a ratio of something else (Sides.Of), the one metric of its lines whose unit
	// holds that word ("s-to-ready/op" for "to-ready"). Empty when the side's lines are not
	// in the output.
	Num, Den []float64
}

// benchLine is a result line of go test -bench: name, iterations, then value-unit pairs
// (golang.org/x/perf's benchfmt reads the same format; this package needs only its ratios).
var benchLine = regexp.MustCompile(`^(Benchmark\S+)\s+\d+\s+(.*)$`)

// gomaxprocs is the suffix go test adds to every name when GOMAXPROCS is not 1.
var gomaxprocs = regexp.MustCompile(`-\d+$`)

// result is one result line: the benchmark's name without the GOMAXPROCS suffix, and its
// metrics by unit.
type result struct {
	name    string
	metrics map[string]float64
}

// Parse reads the output of go test -bench and returns the ratios in it (metrics whose unit
// starts with Prefix), in the order first seen, each with its values and its sides' runs in the
// order run.
func Parse(r io.Reader) ([]Ratio, error) {
	var ratios []Ratio
	var results []result
	index := map[[2]string]int{}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		m := benchLine.FindStringSubmatch(scanner.Text())
		if m == nil {
			continue
		}
		line := result{name: gomaxprocs.ReplaceAllString(m[1], ""), metrics: map[string]float64{}}
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			value, err := strconv.ParseFloat(fields[i], 64)
			unit, isRatio := strings.CutPrefix(fields[i+1], Prefix)
			switch {
			case err != nil && isRatio:
				return nil, fmt.Errorf("%s: %s %s: %w", m[1], fields[i], fields[i+1], err)
			case err != nil:
				continue
			}
			line.metrics[fields[i+1]] = value
			if !isRatio {
				continue
			}
			key := [2]string{comparison(line.name, unit), unit}
			at, seen := index[key]
			if !seen {
				at = len(ratios)
				index[key] = at
				ratios = append(ratios, Ratio{Benchmark: key[0], Unit: unit})
			}
			ratios[at].Values = append(ratios[at].Values, value)
		}
		results = append(results, line)
	}
	for i := range ratios {
		ratios[i].Num, ratios[i].Den = sideRuns(ratios[i], results)
	}
	return ratios, scanner.Err()
}

// sides splits a ratio's unit into what it is of ("" for time per operation) and its two sides.
func sides(unit string) (of, num, den string) {
	of, pair, found := strings.Cut(unit, ":")
	if !found {
		of, pair = "", unit
	}
	num, den, _ = strings.Cut(pair, "/")
	return of, num, den
}

// sideRuns gathers each side's measurements from the lines of its sub-benchmark: the lines
// named after the comparison, then the side's label (its sub-benchmark with any "/" removed).
func sideRuns(r Ratio, results []result) (num, den []float64) {
	of, numLabel, denLabel := sides(r.Unit)
	for _, line := range results {
		rest, ok := strings.CutPrefix(line.name, r.Benchmark+"/")
		if !ok {
			continue
		}
		value, ok := sideValue(line.metrics, of)
		if !ok {
			continue
		}
		switch strings.ReplaceAll(rest, "/", "") {
		case numLabel:
			num = append(num, value)
		case denLabel:
			den = append(den, value)
		}
	}
	return num, den
}

// sideValue is what one side's line measured: its ns/op, or the one metric whose unit holds the
// word of (not a ratio).
func sideValue(metrics map[string]float64, of string) (float64, bool) {
	if of == "" {
		v, ok := metrics["ns/op"]
		return v, ok
	}
	word := regexp.MustCompile(`(^|[^A-Za-z0-9])` + regexp.QuoteMeta(of) + `($|[^A-Za-z0-9])`)
	var found []float64
	for unit, v := range metrics {
		if !strings.HasPrefix(unit, Prefix) && word.MatchString(unit) {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		return 0, false
	}
	return found[0], true
}

// comparison drops from a benchmark's name the sub-benchmark of the side that reported the
// ratio, when the unit names it: the trailing elements whose joined name is a side's label.
func comparison(name, unit string) string {
	_, num, den := sides(unit)
	elements := strings.Split(name, "/")
	for k := len(elements) - 1; k >= 1; k-- {
		if label := strings.Join(elements[k:], ""); label == num || label == den {
			return strings.Join(elements[:k], "/")
		}
	}
	return name
}

// Goal is what notes/measurements.md holds a ratio to: at most (or at least) Value.
type Goal struct {
	// Benchmark is the comparison the goal is for: a top-level benchmark, for every comparison
	// it runs, or one of them ("BenchmarkDiscovery/nodes=100").
	Benchmark string
	// Unit is the ratio's unit without "x-" ("requests:before/after"), or "" for every ratio
	// of Benchmark.
	Unit   string
	AtMost bool
	Value  float64
}

func (g Goal) String() string {
	if g.AtMost {
		return "≤ " + strconv.FormatFloat(g.Value, 'f', -1, 64)
	}
	return "≥ " + strconv.FormatFloat(g.Value, 'f', -1, 64)
}

// Met says whether a ratio meets the goal.
func (g Goal) Met(ratio float64) bool {
	if g.AtMost {
		return ratio <= g.Value
	}
	return ratio >= g.Value
}

// Goals are the goals of a note, in the order it states them.
type Goals []Goal

// For returns the goal of a ratio: the one for its comparison and unit, else for its
// comparison and every unit, then the same for each enclosing benchmark up to the top.
func (gs Goals) For(benchmark, unit string) (Goal, bool) {
	for name := benchmark; ; {
		for _, u := range []string{unit, ""} {
			for _, g := range gs {
				if g.Benchmark == name && g.Unit == u {
					return g, true
				}
			}
		}
		parent := name[:max(strings.LastIndex(name, "/"), 0)]
		if parent == "" {
			return Goal{}, false
		}
		name = parent
	}
}

var (
	namedBenchmark = regexp.MustCompile("`(Benchmark[A-Z][^`\\s]*)`")
	namedUnit      = regexp.MustCompile("`" + Prefix + "([^`\\s]+)`")
	goalText       = regexp.MustCompile(`(?:goal|目标) ?(≤|<=|≥|>=) ?([0-9]+(?:\.[0-9]+)?) ?×`)
)

// Goals reads the goals of a note written as notes/measurements.md writes them: a line (a table
// row) that names one benchmark in backquotes, possibly a sub-benchmark of it
// ("`BenchmarkDiscovery/nodes=100`"), possibly one ratio's unit ("`x-requests:before/after`"),
// and says "goal ≤ 1.1×" (or ≥; "目标" in the Chinese note). A line that names two benchmarks
// or two units and states a goal is ambiguous, and so is a second goal for the same ratio:
// errors.
func ParseGoals(note string) (Goals, error) {
	var goals Goals
	for _, line := range strings.Split(note, "\n") {
		g := goalText.FindStringSubmatch(line)
		if g == nil {
			continue
		}
		names := namedBenchmark.FindAllStringSubmatch(line, -1)
		if len(names) != 1 {
			return nil, fmt.Errorf("a goal (%s) on a line that names %d benchmarks, not one: %s", g[0], len(names), line)
		}
		units := namedUnit.FindAllStringSubmatch(line, -1)
		if len(units) > 1 {
			return nil, fmt.Errorf("a goal (%s) on a line that names %d ratios, not one: %s", g[0], len(units), line)
		}
		value, err := strconv.ParseFloat(g[2], 64)
		if err != nil {
			return nil, err
		}
		goal := Goal{Benchmark: names[0][1], AtMost: g[1] == "≤" || g[1] == "<=", Value: value}
		if len(units) == 1 {
			goal.Unit = units[0][1]
		}
		for _, other := range goals {
			if other.Benchmark == goal.Benchmark && other.Unit == goal.Unit {
				return nil, fmt.Errorf("two goals for %s %s: %s and %s", goal.Benchmark, Prefix+goal.Unit, other, goal)
			}
		}
		goals = append(goals, goal)
	}
	return goals, nil
}

// Tally counts the verdicts of a summary.
type Tally struct {
	Met, Missed, Inconclusive, NoGoal int
}

// Summarize prints one line per ratio: each side's median with its 95 % interval (as benchstat
// prints them), the ratio of the medians, and the goal the note sets for it with the verdict
// (Goal.Judge); then the goals no ratio was measured for in this run (a benchmark skipped, or
// left out by -bench).
func Summarize(w io.Writer, ratios []Ratio, goals Goals) (Tally, error) {
	var tally Tally
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0) // as kubectl lays out its tables
	fmt.Fprintln(tw, "BENCHMARK\tRATIO\tNUMERATOR\tDENOMINATOR\tRATIO OF MEDIANS\tGOAL\tVERDICT")
	used := map[Goal]bool{}
	for _, r := range ratios {
		of, _, _ := sides(r.Unit)
		num, den := SpreadOf(r.Num), SpreadOf(r.Den)
		ratio, numText, denText := "-", "-", "-"
		if len(r.Num) > 0 && len(r.Den) > 0 {
			ratio = number(num.Median / den.Median)
			numText, denText = spread(r.Num, num, of == ""), spread(r.Den, den, of == "")
		}
		goalText, verdict := "-", "no goal in the note"
		g, ok := goals.For(r.Benchmark, r.Unit)
		switch {
		case !ok:
			tally.NoGoal++
		case len(r.Num) == 0 || len(r.Den) == 0:
			used[g] = true
			goalText, verdict = g.String(), "inconclusive (a side's runs are not in the output)"
			tally.Inconclusive++
		default:
			used[g] = true
			goalText = g.String()
			j := g.Judge(r.Num, r.Den)
			verdict = describe(j, len(r.Num), len(r.Den))
			switch j.Verdict {
			case Met:
				tally.Met++
			case Missed:
				tally.Missed++
			default:
				tally.Inconclusive++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Benchmark, r.Unit, numText, denText, ratio, goalText, verdict)
	}
	for _, g := range goals {
		if !used[g] {
			name := g.Benchmark
			if g.Unit != "" {
				name += " " + Prefix + g.Unit
			}
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\tnot measured in this run\n", name, g)
		}
	}
	return tally, tw.Flush()
}

// describe says a judgement in a few words, with the runs it rests on.
func describe(j Judgement, n1, n2 int) string {
	runs := fmt.Sprintf("n=%d", n1)
	if n1 != n2 {
		runs = fmt.Sprintf("n=%d+%d", n1, n2)
	}
	verdict := string(j.Verdict)
	if j.Verdict == Missed {
		verdict = "MISSED"
	}
	switch {
	case j.Exact:
		return fmt.Sprintf("%s (exact, %s)", verdict, runs)
	case j.Verdict == Inconclusive:
		return fmt.Sprintf("inconclusive (spread too wide: p=%.2f, %s)", j.P, runs)
	}
	return fmt.Sprintf("%s (p=%.3f, %s)", verdict, j.P, runs)
}

// spread shows a side as benchstat does: its median, then "±" the interval's wider side as a
// percentage of it ("±∞" with fewer than six runs; "±0%" when two runs or more gave one value).
// A time per operation is in ns, shown in the unit that suits it.
func spread(values []float64, s Spread, nanoseconds bool) string {
	text := number(s.Median)
	if nanoseconds {
		text = duration(s.Median)
	}
	if p := s.Percent(); len(values) >= 2 && constant(values) {
		text += " ±0%"
	} else if math.IsInf(p, 1) {
		text += " ±∞"
	} else {
		text += fmt.Sprintf(" ±%.0f%%", p)
	}
	return text
}

// duration shows a time in ns with three significant digits in ns, µs, ms or s.
func duration(ns float64) string {
	for _, u := range []struct {
		name  string
		scale float64
	}{{"s", 1e9}, {"ms", 1e6}, {"µs", 1e3}} {
		if math.Abs(ns) >= u.scale {
			return number(ns/u.scale) + u.name
		}
	}
	return number(ns) + "ns"
}

// number shows a ratio with three significant digits (0.0239, 1.03, 11), a large one whole.
func number(v float64) string {
	if v >= 1000 || v <= -1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
