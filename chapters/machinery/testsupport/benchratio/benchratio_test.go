package benchratio

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fewIterations makes testing.Benchmark run n iterations instead of a second's worth, for one test.
func fewIterations(t *testing.T, n int) {
	old := flag.Lookup("test.benchtime").Value.String()
	require.NoError(t, flag.Set("test.benchtime", fmt.Sprintf("%dx", n)))
	t.Cleanup(func() { _ = flag.Set("test.benchtime", old) })
}

// report runs a benchmark that calls Report, and returns the metrics it reported.
func report(s *Sides, num, den string) map[string]float64 {
	return testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
		}
		s.Report(b, num, den)
	}).Extra
}

func TestSidesReport(t *testing.T) {
	fewIterations(t, 1)
	tests := []struct {
		name     string
		of       string
		measured [][2]any // side, value, in the order run
		want     map[string]float64
	}{
		{"both sides", "", [][2]any{{"toy", 1.5}, {"real", 2.0}}, map[string]float64{"x-toy/real": 0.75}},
		{"the numerator ran last", "", [][2]any{{"real", 2.0}, {"toy", 3.0}}, map[string]float64{"x-toy/real": 1.5}},
		{"of something else than time", "requests", [][2]any{{"toy", 11}, {"real", 1}}, map[string]float64{"x-requests:toy/real": 11}},
		{"-count=3: the last run against the other side's median", "", [][2]any{{"toy", 1}, {"toy", 9}, {"toy", 2}, {"real", 4}}, map[string]float64{"x-toy/real": 0.5}},
		{"-count=2: the median of an even count", "", [][2]any{{"toy", 1}, {"toy", 3}, {"real", 8}}, map[string]float64{"x-toy/real": 0.25}},
		{"one side left out by -bench", "", [][2]any{{"real", 2.0}}, map[string]float64{}},
		{"nothing measured", "", nil, map[string]float64{}},
		{"zero denominator", "", [][2]any{{"toy", 1.0}, {"real", 0.0}}, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Sides{Of: tt.of}
			for _, m := range tt.measured {
				s.Set(m[0].(string), toFloat(m[1]))
			}
			assert.Equal(t, tt.want, report(s, "toy", "real"))
		})
	}
}

func toFloat(v any) float64 {
	if i, ok := v.(int); ok {
		return float64(i)
	}
	return v.(float64)
}

// Time records what go test reports as ns/op, timer stops excluded.
func TestSidesTime(t *testing.T) {
	fewIterations(t, 20)
	var s Sides
	start := time.Now()
	result := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			time.Sleep(time.Millisecond)
			b.StopTimer()
			time.Sleep(2 * time.Millisecond) // not measured
			b.StartTimer()
		}
		s.Time(b, "toy")
	})
	require.Len(t, s.measured["toy"], 1)
	assert.Equal(t, float64(result.T.Nanoseconds())/float64(result.N), s.measured["toy"][0])
	assert.LessOrEqual(t, result.T, time.Since(start)-20*2*time.Millisecond, "the stopped timer's sleeps are left out")
}

func TestUnit(t *testing.T) {
	assert.Equal(t, "x-toy/real", Unit("", "toy", "real"))
	assert.Equal(t, "x-to-ready:nodes=3/nodes=1", Unit("to-ready", "nodes=3", "nodes=1"))
	for _, bad := range [][3]string{{"", "HTTP/2.0", "HTTP1.1"}, {"a:b", "x", "y"}, {"", "two words", "y"}} {
		assert.Panics(t, func() { Unit(bad[0], bad[1], bad[2]) }, "%q", bad)
	}
}

// Parse finds each ratio under the comparison's name, with one value per run, and each side's
// runs, and nothing else, in testdata/bench.txt: what this repository's benchmarks printed at
// -benchtime=1x (Discovery with -count=2), Start and AllNodes left out.
func TestParse(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "bench.txt"))
	require.NoError(t, err)
	defer f.Close()
	ratios, err := Parse(f)
	require.NoError(t, err)
	assert.Equal(t, []Ratio{
		{Benchmark: "BenchmarkLoadManifests/manifests=1", Unit: "toy/real", Values: []float64{5.046}, Num: []float64{2611342}, Den: []float64{517481}},
		{Benchmark: "BenchmarkLoadManifests/manifests=100", Unit: "toy/real", Values: []float64{1.028}, Num: []float64{20212145}, Den: []float64{19655265}},
		{Benchmark: "BenchmarkLoadManifests/manifests=1000", Unit: "toy/real", Values: []float64{0.9886}, Num: []float64{192780729}, Den: []float64{194998571}},
		{Benchmark: "BenchmarkNewManifestVisible", Unit: "toy/real", Values: []float64{0.02389}, Num: []float64{2387552}, Den: []float64{99922018}},
		{Benchmark: "BenchmarkFetch", Unit: "client/bare-net-http", Values: []float64{0.9705}, Num: []float64{13089813}, Den: []float64{13488092}},
		{Benchmark: "BenchmarkPoll100", Unit: "HTTP2.0/HTTP1.1", Values: []float64{1.202}, Num: []float64{1275954702}, Den: []float64{1061386384}},
		{Benchmark: "BenchmarkDiscovery/nodes=1", Unit: "before/after", Values: []float64{6.218, 5.079}, Num: []float64{6364048, 1032928}, Den: []float64{594817, 728195}},
		{Benchmark: "BenchmarkDiscovery/nodes=1", Unit: "requests:before/after", Values: []float64{2, 2}, Num: []float64{2, 2}, Den: []float64{1, 1}},
		{Benchmark: "BenchmarkDiscovery/nodes=10", Unit: "before/after", Values: []float64{5.572, 5.894}, Num: []float64{17909192, 5433110}, Den: []float64{2094675, 1980336}},
		{Benchmark: "BenchmarkDiscovery/nodes=10", Unit: "requests:before/after", Values: []float64{11, 11}, Num: []float64{11, 11}, Den: []float64{1, 1}},
		{Benchmark: "BenchmarkDiscovery/nodes=100", Unit: "before/after", Values: []float64{6.449, 7.089}, Num: []float64{60646743, 22796176}, Den: []float64{6469456, 5885417}},
		{Benchmark: "BenchmarkDiscovery/nodes=100", Unit: "requests:before/after", Values: []float64{101, 101}, Num: []float64{101, 101}, Den: []float64{1, 1}},
	}, ratios)

	_, err = Parse(strings.NewReader("BenchmarkX/a-2   1   12 ns/op   1,5 x-a/b\n"))
	assert.ErrorContains(t, err, "BenchmarkX/a-2: 1,5 x-a/b")
}

// Each side's runs come from its own lines: ns/op for a time, the metric holding Of otherwise.
func TestParseSides(t *testing.T) {
	tests := []struct {
		name, output string
		num, den     []float64
	}{
		{"-count=2 of a time, sides one after the other",
			"BenchmarkX/toy-2 1 10 ns/op\nBenchmarkX/toy-2 1 12 ns/op\nBenchmarkX/real-2 1 20 ns/op 0.55 x-toy/real\nBenchmarkX/real-2 1 22 ns/op 0.5 x-toy/real\n",
			[]float64{10, 12}, []float64{20, 22}},
		{"a side whose name holds a /",
			"BenchmarkP/HTTP/2.0-2 1 30 ns/op\nBenchmarkP/HTTP/1.1-2 1 20 ns/op 1.5 x-HTTP2.0/HTTP1.1\n",
			[]float64{30}, []float64{20}},
		{"a ratio of something else: the metric that holds the word, not ns/op nor the ratio",
			"BenchmarkS/nodes=1-2 1 9 ns/op 4 s-to-ready/op 5 s-to-mirrors/op\nBenchmarkS/nodes=3-2 1 8 ns/op 3 s-to-ready/op 6 s-to-mirrors/op 0.75 x-to-ready:nodes=3/nodes=1\n",
			[]float64{3}, []float64{4}},
		{"a word that is only part of a metric's name is not it",
			"BenchmarkS/nodes=1-2 1 9 ns/op 4 s-to-readyish/op\nBenchmarkS/nodes=3-2 1 8 ns/op 3 s-to-readyish/op 0.75 x-to-ready:nodes=3/nodes=1\n",
			nil, nil},
		{"a sub-benchmark of another size is not a side",
			"BenchmarkL/n=1/toy-2 1 1 ns/op\nBenchmarkL/n=10/toy-2 1 10 ns/op\nBenchmarkL/n=1/real-2 1 2 ns/op 0.5 x-toy/real\n",
			[]float64{1}, []float64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ratios, err := Parse(strings.NewReader(tt.output))
			require.NoError(t, err)
			require.Len(t, ratios, 1)
			assert.Equal(t, tt.num, ratios[0].Num, "numerator")
			assert.Equal(t, tt.den, ratios[0].Den, "denominator")
		})
	}
}

func TestComparison(t *testing.T) {
	tests := []struct{ name, unit, want string }{
		{"BenchmarkLoadManifests/manifests=100/real", "toy/real", "BenchmarkLoadManifests/manifests=100"},
		{"BenchmarkPoll100/HTTP/1.1", "HTTP2.0/HTTP1.1", "BenchmarkPoll100"},
		{"BenchmarkStart/nodes=3", "to-ready:nodes=3/nodes=1", "BenchmarkStart"},
		{"BenchmarkX/other", "toy/real", "BenchmarkX/other"}, // the side is not named: keep the whole name
		{"BenchmarkX", "toy/real", "BenchmarkX"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, comparison(tt.name, tt.unit), "%s %s", tt.name, tt.unit)
	}
}

func TestParseGoals(t *testing.T) {
	goals, err := ParseGoals("| `BenchmarkFetch` | the client vs bare | 1.02×; goal ≤ 1.1× |\n" +
		"| `BenchmarkAllNodes` | 4 nodes vs 1 | goal <= 3× |\n" +
		"`BenchmarkFloor` must stay fast: goal ≥ 2×.\n" +
		"| `BenchmarkDiscovery/nodes=100`, `x-requests:before/after` | goal ≥ 101× |\n" +
		"| `BenchmarkStart`，`x-to-ready:nodes=3/nodes=1` | 目标 ≤ 1.5× |\n" +
		"`BenchmarkLoadManifests` has no goal.\n")
	require.NoError(t, err)
	assert.Equal(t, Goals{
		{Benchmark: "BenchmarkFetch", AtMost: true, Value: 1.1},
		{Benchmark: "BenchmarkAllNodes", AtMost: true, Value: 3},
		{Benchmark: "BenchmarkFloor", AtMost: false, Value: 2},
		{Benchmark: "BenchmarkDiscovery/nodes=100", Unit: "requests:before/after", AtMost: false, Value: 101},
		{Benchmark: "BenchmarkStart", Unit: "to-ready:nodes=3/nodes=1", AtMost: true, Value: 1.5},
	}, goals)

	for note, want := range map[string]string{
		"`BenchmarkA` and `BenchmarkB`: goal ≤ 2×\n":                           "names 2 benchmarks, not one",
		"`BenchmarkA`, `x-a/b` or `x-c/d`: goal ≤ 2×\n":                        "names 2 ratios, not one",
		"`BenchmarkA`: goal ≤ 2×\n`BenchmarkA`: goal ≤ 3×\n":                   "two goals for BenchmarkA x-: ≤ 2 and ≤ 3",
		"`BenchmarkA`, `x-a/b`: goal ≤ 2×\n`BenchmarkA`, `x-a/b`: goal ≤ 2×\n": "two goals for BenchmarkA x-a/b",
	} {
		_, err := ParseGoals(note)
		assert.ErrorContains(t, err, want, note)
	}
}

// A ratio takes the most specific goal: its comparison and unit, its comparison, then the
// enclosing benchmarks'.
func TestGoalsFor(t *testing.T) {
	goals := Goals{
		{Benchmark: "BenchmarkD", Unit: "before/after", Value: 2},
		{Benchmark: "BenchmarkD/nodes=100", Unit: "requests:before/after", Value: 101},
		{Benchmark: "BenchmarkD/nodes=1", Value: 3},
		{Benchmark: "BenchmarkF", AtMost: true, Value: 1.1},
	}
	tests := []struct {
		benchmark, unit string
		want            float64 // 0: no goal
	}{
		{"BenchmarkD/nodes=100", "requests:before/after", 101},
		{"BenchmarkD/nodes=100", "before/after", 2},
		{"BenchmarkD/nodes=10", "requests:before/after", 0},
		{"BenchmarkD/nodes=1", "requests:before/after", 3},
		{"BenchmarkD/nodes=1", "before/after", 3},
		{"BenchmarkF", "client/bare", 1.1},
		{"BenchmarkF/size=big", "client/bare", 1.1},
		{"BenchmarkFetch", "client/bare", 0}, // a name that only starts like one
	}
	for _, tt := range tests {
		g, ok := goals.For(tt.benchmark, tt.unit)
		assert.Equal(t, tt.want != 0, ok, "%s %s", tt.benchmark, tt.unit)
		assert.Equal(t, tt.want, g.Value, "%s %s", tt.benchmark, tt.unit)
	}
}

// The goals make bench reads are the note's own, the Chinese note states the same, and every
// ratio of testdata/bench.txt (the repository's benchmarks but those that start kubelets or clusters:
// Start, AllNodes, WatchVsPoll, Eviction) has one.
func TestGoalsOfTheNote(t *testing.T) {
	goals := map[string]Goals{}
	for _, file := range []string{"measurements.md", "zh/measurements.md"} {
		note, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "notes", file))
		require.NoError(t, err)
		goals[file], err = ParseGoals(string(note))
		require.NoError(t, err, file)
	}
	assert.Equal(t, Goals{
		{Benchmark: "BenchmarkNewManifestVisible", Unit: "toy/real", AtMost: true, Value: 1.0},
		{Benchmark: "BenchmarkLoadManifests", Unit: "toy/real", AtMost: true, Value: 1.15},
		{Benchmark: "BenchmarkFetch", Unit: "client/bare-net-http", AtMost: true, Value: 1.1},
		{Benchmark: "BenchmarkPoll100", Unit: "HTTP2.0/HTTP1.1", AtMost: true, Value: 1.2},
		{Benchmark: "BenchmarkDiscovery", Unit: "before/after", Value: 2},
		{Benchmark: "BenchmarkDiscovery/nodes=1", Unit: "requests:before/after", Value: 2},
		{Benchmark: "BenchmarkDiscovery/nodes=10", Unit: "requests:before/after", Value: 11},
		{Benchmark: "BenchmarkDiscovery/nodes=100", Unit: "requests:before/after", Value: 101},
		{Benchmark: "BenchmarkWatchVsPoll", Unit: "poll-10s/watch", Value: 100},
		{Benchmark: "BenchmarkWatchVsPoll", Unit: "bytes:poll-10s/watch", Value: 50},
		{Benchmark: "BenchmarkWatchVsPoll", Unit: "requests:poll-10s/watch", Value: 360},
		{Benchmark: "BenchmarkAllNodes", Unit: "nodes=4/nodes=1", AtMost: true, Value: 3},
		{Benchmark: "BenchmarkStart", Unit: "to-ready:nodes=3/nodes=1", AtMost: true, Value: 1.5},
		{Benchmark: "BenchmarkEviction", Unit: "to-first-eviction:status=10s/status=1s", AtMost: true, Value: 1.1},
		{Benchmark: "BenchmarkEviction", Unit: "to-MemoryPressure:status=10s/status=1s", AtMost: true, Value: 2},
	}, goals["measurements.md"])
	assert.Equal(t, goals["measurements.md"], goals["zh/measurements.md"], "the Chinese note states the same goals")

	f, err := os.Open(filepath.Join("testdata", "bench.txt"))
	require.NoError(t, err)
	defer f.Close()
	ratios, err := Parse(f)
	require.NoError(t, err)
	for _, r := range ratios {
		_, ok := goals["measurements.md"].For(r.Benchmark, r.Unit)
		assert.True(t, ok, "%s x-%s has no goal in notes/measurements.md", r.Benchmark, r.Unit)
	}
}

// SpreadOf is benchstat's summary: the median, and the order statistics that bound it at 95 %.
func TestSpreadOf(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name   string
		values []float64
		want   Spread
	}{
		{"ten runs: the 2nd and 9th of ten bound the median", []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, Spread{Runs: 10, Median: 5.5, Lo: 2, Hi: 9}},
		{"six runs: the fewest with an interval, the lowest and highest", []float64{6, 1, 5, 2, 4, 3}, Spread{Runs: 6, Median: 3.5, Lo: 1, Hi: 6}},
		{"five runs: no interval at 95 %", []float64{5, 1, 4, 2, 3}, Spread{Runs: 5, Median: 3, Lo: -inf, Hi: 5}},
		{"one run", []float64{7}, Spread{Runs: 1, Median: 7, Lo: -inf, Hi: inf}},
		{"none", nil, Spread{Lo: -inf, Hi: inf}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := slices.Clone(tt.values)
			assert.Equal(t, tt.want, SpreadOf(values))
			assert.Equal(t, tt.values, values, "the runs are left in their order")
		})
	}
	assert.InDelta(t, 10, Spread{Median: 100, Lo: 95, Hi: 110}.Percent(), 1e-9)
	assert.InDelta(t, 20, Spread{Median: 100, Lo: 80, Hi: 101}.Percent(), 1e-9)
	assert.True(t, math.IsInf(Spread{Median: 1, Lo: -inf, Hi: inf}.Percent(), 1))
	assert.True(t, math.IsInf(Spread{Median: 1, Lo: -inf, Hi: 2}.Percent(), 1))
}

// Judge says met or missed only when the runs tell the ratio from the goal.
func TestJudge(t *testing.T) {
	atMost := Goal{AtMost: true, Value: 1.1}
	atLeast := Goal{Value: 2}
	six := func(vs ...float64) []float64 { return vs }
	tests := []struct {
		name     string
		goal     Goal
		num, den []float64
		want     Verdict
		exact    bool
	}{
		{"one run each, far under the goal: proves nothing", atMost, six(50), six(100), Inconclusive, false},
		{"one run each, far over the goal: proves nothing", atMost, six(150), six(100), Inconclusive, false},
		{"six runs each, all under the goal", atMost, six(100, 101, 99, 102, 98, 100), six(100, 103, 97, 101, 99, 100), Met, false},
		{"six runs each, all over the goal", atMost, six(130, 131, 129, 132, 128, 130), six(100, 103, 97, 101, 99, 100), Missed, false},
		{"six runs each, the medians under the goal but the runs astride it", atMost, six(70, 140, 90, 150, 100, 95), six(100, 60, 130, 101, 99, 100), Inconclusive, false},
		{"six runs each, the medians over the goal but the runs astride it", atMost, six(120, 180, 90, 150, 110, 125), six(100, 60, 130, 101, 99, 100), Inconclusive, false},
		{"at least: before well over twice after", atLeast, six(31, 33, 30, 35, 29, 32), six(10, 11, 9, 10, 12, 10), Met, false},
		{"at least: before under twice after", atLeast, six(15, 16, 14, 15, 17, 15), six(10, 11, 9, 10, 12, 10), Missed, false},
		{"counts that do not vary, at the goal", Goal{Value: 101}, six(101, 101), six(1, 1), Met, true},
		{"counts that do not vary, under the goal", Goal{Value: 101}, six(100, 100, 100), six(1, 1, 1), Missed, true},
		{"a count once is one run", Goal{Value: 101}, six(101), six(1), Inconclusive, false},
		{"a side without runs", atMost, nil, six(1, 2), Inconclusive, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := tt.goal.Judge(tt.num, tt.den)
			assert.Equal(t, tt.want, j.Verdict, "p=%v", j.P)
			assert.Equal(t, tt.exact, j.Exact)
			if tt.want != Inconclusive && !tt.exact {
				assert.LessOrEqual(t, j.P, Alpha)
			}
			if tt.want == Inconclusive {
				assert.Greater(t, j.P, Alpha)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	ratios := []Ratio{
		{Benchmark: "BenchmarkNewManifestVisible", Unit: "toy/real", Values: []float64{0.7879}, Num: []float64{1.56e6}, Den: []float64{1.98e6}},
		{Benchmark: "BenchmarkFetch", Unit: "client/bare-net-http", Values: []float64{1, 1, 1, 1, 1, 1},
			Num: []float64{7.1e6, 7.2e6, 7.15e6, 7.3e6, 7.0e6, 7.17e6}, Den: []float64{7.0e6, 6.9e6, 7.1e6, 7.05e6, 6.95e6, 7.0e6}},
		{Benchmark: "BenchmarkPoll100", Unit: "HTTP2.0/HTTP1.1", Values: []float64{1, 1, 1, 1, 1, 1},
			Num: []float64{0.8e9, 0.9e9, 0.85e9, 0.82e9, 0.88e9, 0.86e9}, Den: []float64{0.6e9, 0.62e9, 0.61e9, 0.59e9, 0.6e9, 0.63e9}},
		{Benchmark: "BenchmarkDiscovery/nodes=1", Unit: "requests:before/after", Values: []float64{2, 2}, Num: []float64{2, 2}, Den: []float64{1, 1}},
		{Benchmark: "BenchmarkOther", Unit: "a/b", Values: []float64{1}},
	}
	goals := Goals{
		{Benchmark: "BenchmarkNewManifestVisible", AtMost: true, Value: 1},
		{Benchmark: "BenchmarkFetch", AtMost: true, Value: 1.1},
		{Benchmark: "BenchmarkPoll100", AtMost: true, Value: 1.2},
		{Benchmark: "BenchmarkDiscovery/nodes=1", Unit: "requests:before/after", Value: 2},
		{Benchmark: "BenchmarkAllNodes", Unit: "nodes=4/nodes=1", AtMost: true, Value: 3},
	}
	var out bytes.Buffer
	tally, err := Summarize(&out, ratios, goals)
	require.NoError(t, err)
	assert.Equal(t, Tally{Met: 2, Missed: 1, Inconclusive: 1, NoGoal: 1}, tally)
	assert.Equal(t, `BENCHMARK                             RATIO                   NUMERATOR    DENOMINATOR   RATIO OF MEDIANS   GOAL    VERDICT
BenchmarkNewManifestVisible           toy/real                1.56ms ±∞    1.98ms ±∞     0.788              ≤ 1     inconclusive (spread too wide: p=1.00, n=1)
BenchmarkFetch                        client/bare-net-http    7.16ms ±2%   7ms ±1%       1.02               ≤ 1.1   met (p=0.002, n=6)
BenchmarkPoll100                      HTTP2.0/HTTP1.1         855ms ±6%    605ms ±4%     1.41               ≤ 1.2   MISSED (p=0.002, n=6)
BenchmarkDiscovery/nodes=1            requests:before/after   2 ±0%        1 ±0%         2                  ≥ 2     met (exact, n=2)
BenchmarkOther                        a/b                     -            -             -                  -       no goal in the note
BenchmarkAllNodes x-nodes=4/nodes=1   -                       -            -             -                  ≤ 3     not measured in this run
`, out.String())
}

// benchsummary's command, on a file, against the real note.
func TestSummaryCommand(t *testing.T) {
	cmd := NewSummaryCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--goals", filepath.Join("..", "..", "..", "..", "notes", "measurements.md"), filepath.Join("testdata", "bench.txt")})
	require.NoError(t, cmd.Execute())
	// One run of each side (two of Discovery's) decides no time: only the exact counts are judged.
	assert.Equal(t, `
Side by side: each ratio's sides (median ±95% interval of their runs), the ratio of the medians, and its goal in ../../../../notes/measurements.md.
BENCHMARK                                                    RATIO                   NUMERATOR   DENOMINATOR   RATIO OF MEDIANS   GOAL     VERDICT
BenchmarkLoadManifests/manifests=1                           toy/real                2.61ms ±∞   517µs ±∞      5.05               ≤ 1.15   inconclusive (spread too wide: p=1.00, n=1)
BenchmarkLoadManifests/manifests=100                         toy/real                20.2ms ±∞   19.7ms ±∞     1.03               ≤ 1.15   inconclusive (spread too wide: p=1.00, n=1)
BenchmarkLoadManifests/manifests=1000                        toy/real                193ms ±∞    195ms ±∞      0.989              ≤ 1.15   inconclusive (spread too wide: p=1.00, n=1)
BenchmarkNewManifestVisible                                  toy/real                2.39ms ±∞   99.9ms ±∞     0.0239             ≤ 1      inconclusive (spread too wide: p=1.00, n=1)
BenchmarkFetch                                               client/bare-net-http    13.1ms ±∞   13.5ms ±∞     0.97               ≤ 1.1    inconclusive (spread too wide: p=1.00, n=1)
BenchmarkPoll100                                             HTTP2.0/HTTP1.1         1.28s ±∞    1.06s ±∞      1.2                ≤ 1.2    inconclusive (spread too wide: p=1.00, n=1)
BenchmarkDiscovery/nodes=1                                   before/after            3.7ms ±∞    662µs ±∞      5.59               ≥ 2      inconclusive (spread too wide: p=1.00, n=2)
BenchmarkDiscovery/nodes=1                                   requests:before/after   2 ±0%       1 ±0%         2                  ≥ 2      met (exact, n=2)
BenchmarkDiscovery/nodes=10                                  before/after            11.7ms ±∞   2.04ms ±∞     5.73               ≥ 2      inconclusive (spread too wide: p=0.33, n=2)
BenchmarkDiscovery/nodes=10                                  requests:before/after   11 ±0%      1 ±0%         11                 ≥ 11     met (exact, n=2)
BenchmarkDiscovery/nodes=100                                 before/after            41.7ms ±∞   6.18ms ±∞     6.75               ≥ 2      inconclusive (spread too wide: p=0.33, n=2)
BenchmarkDiscovery/nodes=100                                 requests:before/after   101 ±0%     1 ±0%         101                ≥ 101    met (exact, n=2)
BenchmarkWatchVsPoll x-poll-10s/watch                        -                       -           -             -                  ≥ 100    not measured in this run
BenchmarkWatchVsPoll x-bytes:poll-10s/watch                  -                       -           -             -                  ≥ 50     not measured in this run
BenchmarkWatchVsPoll x-requests:poll-10s/watch               -                       -           -             -                  ≥ 360    not measured in this run
BenchmarkAllNodes x-nodes=4/nodes=1                          -                       -           -             -                  ≤ 3      not measured in this run
BenchmarkStart x-to-ready:nodes=3/nodes=1                    -                       -           -             -                  ≤ 1.5    not measured in this run
BenchmarkEviction x-to-first-eviction:status=10s/status=1s   -                       -           -             -                  ≤ 1.1    not measured in this run
BenchmarkEviction x-to-MemoryPressure:status=10s/status=1s   -                       -           -             -                  ≤ 2      not measured in this run
Goals: 3 met, 0 missed, 9 inconclusive.
A goal is met or missed only when the runs say so (a U test, p ≤ 0.05, as benchstat's): one run proves nothing on a busy machine; more runs (make bench BENCH_COUNT=10) or a quieter machine decide the inconclusive ones.
`, out.String())
}

// A ratio that misses its goal is marked, and each verdict counted at the end with the ratios
// that have no goal.
func TestSummaryCommandMissed(t *testing.T) {
	note := filepath.Join(t.TempDir(), "goals.md")
	require.NoError(t, os.WriteFile(note, []byte("| `BenchmarkDiscovery/nodes=10`, `x-requests:before/after` | goal ≥ 12× |\n| `BenchmarkDiscovery`, `x-before/after` | goal ≥ 2× |\n"), 0o644))
	cmd := NewSummaryCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--goals", note, filepath.Join("testdata", "bench.txt")})
	require.NoError(t, cmd.Execute())
	assert.Contains(t, out.String(), "≥ 12   MISSED (exact, n=2)\n")
	assert.True(t, strings.HasSuffix(out.String(), "\nGoals: 0 met, 1 missed, 3 inconclusive; 8 ratios have no goal in "+note+".\n"+
		"A goal is met or missed only when the runs say so (a U test, p ≤ 0.05, as benchstat's): one run proves nothing on a busy machine; more runs (make bench BENCH_COUNT=10) or a quieter machine decide the inconclusive ones.\n"), out.String())
}
