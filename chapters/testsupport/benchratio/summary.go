package benchratio

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Ratio is one ratio a side-by-side benchmark reported, with a value for each run (-count).
type Ratio struct {
	// Benchmark is the name of the comparison: the reporting line's name without go test's
	// GOMAXPROCS suffix and, when it is one of the two sides, without that side's sub-benchmark
	// ("BenchmarkLoadManifests/manifests=100", from ".../manifests=100/real-2").
	Benchmark string
	// Unit is the metric's unit without the "x-": "toy/real", "requests:before/after".
	Unit   string
	Values []float64
}

// Top is the top-level benchmark of the comparison: the name notes/measurements.md uses.
func (r Ratio) Top() string {
	top, _, _ := strings.Cut(r.Benchmark, "/")
	return top
}

// benchLine is a result line of go test -bench: name, iterations, then value-unit pairs
// (golang.org/x/perf's benchfmt reads the same format; this package needs only its ratios).
var benchLine = regexp.MustCompile(`^(Benchmark\S+)\s+\d+\s+(.*)$`)

// gomaxprocs is the suffix go test adds to every name when GOMAXPROCS is not 1.
var gomaxprocs = regexp.MustCompile(`-\d+$`)

// Parse reads the output of go test -bench and returns the ratios in it (metrics whose unit
// starts with Prefix), in the order first seen, each with its values in the order run.
func Parse(r io.Reader) ([]Ratio, error) {
	var ratios []Ratio
	index := map[[2]string]int{}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		m := benchLine.FindStringSubmatch(scanner.Text())
		if m == nil {
			continue
		}
		name := gomaxprocs.ReplaceAllString(m[1], "")
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			unit, ok := strings.CutPrefix(fields[i+1], Prefix)
			if !ok {
				continue
			}
			value, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", m[1], fields[i], fields[i+1], err)
			}
			key := [2]string{comparison(name, unit), unit}
			at, seen := index[key]
			if !seen {
				at = len(ratios)
				index[key] = at
				ratios = append(ratios, Ratio{Benchmark: key[0], Unit: unit})
			}
			ratios[at].Values = append(ratios[at].Values, value)
		}
	}
	return ratios, scanner.Err()
}

// comparison drops from a benchmark's name the sub-benchmark of the side that reported the
// ratio, when the unit names it: the trailing elements whose joined name is a side's label.
func comparison(name, unit string) string {
	_, sides, found := strings.Cut(unit, ":")
	if !found {
		sides = unit
	}
	num, den, _ := strings.Cut(sides, "/")
	elements := strings.Split(name, "/")
	for k := len(elements) - 1; k >= 1; k-- {
		if label := strings.Join(elements[k:], ""); label == num || label == den {
			return strings.Join(elements[:k], "/")
		}
	}
	return name
}

// Goal is what notes/measurements.md holds a benchmark's ratio to: at most (or at least) Value.
type Goal struct {
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

var (
	namedBenchmark = regexp.MustCompile("`(Benchmark[A-Z]\\w*)`")
	goalText       = regexp.MustCompile(`goal (≤|<=|≥|>=) ?([0-9]+(?:\.[0-9]+)?) ?×`)
)

// Goals reads the goals of a note written as notes/measurements.md writes them: on the line (a
// table row) that names a benchmark in backquotes, "goal ≤ 1.1×" (or ≥). A line that names two
// benchmarks and states a goal is ambiguous, and an error.
func Goals(note string) (map[string]Goal, error) {
	goals := map[string]Goal{}
	for _, line := range strings.Split(note, "\n") {
		g := goalText.FindStringSubmatch(line)
		if g == nil {
			continue
		}
		names := namedBenchmark.FindAllStringSubmatch(line, -1)
		if len(names) != 1 {
			return nil, fmt.Errorf("a goal (%s) on a line that names %d benchmarks, not one: %s", g[0], len(names), line)
		}
		value, err := strconv.ParseFloat(g[2], 64)
		if err != nil {
			return nil, err
		}
		goals[names[0][1]] = Goal{AtMost: g[1] == "≤" || g[1] == "<=", Value: value}
	}
	return goals, nil
}

// Summarize prints one line per ratio, its value (the median of several runs, with their
// range), and the goal the note sets for its benchmark, met or missed; then the goals no ratio
// was measured for in this run (a benchmark skipped or left out by -bench). It returns how many
// ratios missed their goal.
func Summarize(w io.Writer, ratios []Ratio, goals map[string]Goal) (missed int, err error) {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0) // as kubectl lays out its tables
	fmt.Fprintln(tw, "BENCHMARK\tRATIO\tMEASURED\tGOAL")
	measured := map[string]bool{}
	for _, r := range ratios {
		measured[r.Top()] = true
		value := number(Median(r.Values))
		switch low, high := slices.Min(r.Values), slices.Max(r.Values); {
		case len(r.Values) > 1 && low == high:
			value += fmt.Sprintf(" (%d runs)", len(r.Values))
		case len(r.Values) > 1:
			value += fmt.Sprintf(" (median of %d, %s–%s)", len(r.Values), number(low), number(high))
		}
		verdict := "-"
		if g, ok := goals[r.Top()]; ok {
			verdict = g.String() + ": met"
			if !g.Met(Median(r.Values)) {
				verdict = g.String() + ": MISSED"
				missed++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Benchmark, r.Unit, value, verdict)
	}
	var unmeasured []string
	for name := range goals {
		if !measured[name] {
			unmeasured = append(unmeasured, name)
		}
	}
	slices.Sort(unmeasured)
	for _, name := range unmeasured {
		fmt.Fprintf(tw, "%s\t-\tnot measured in this run\t%s\n", name, goals[name])
	}
	return missed, tw.Flush()
}

// number shows a ratio with three significant digits (0.0239, 1.03, 11), a large one whole.
func number(v float64) string {
	if v >= 1000 || v <= -1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
