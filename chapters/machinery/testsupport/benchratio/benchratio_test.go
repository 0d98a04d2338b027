package benchratio

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
