package benchratio

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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

// Parse finds each ratio under the comparison's name, with one value per run, and nothing else,
// in testdata/bench.txt: what this repository's benchmarks printed at -benchtime=1x (Discovery
// with -count=2), Start and AllNodes left out.
func TestParse(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "bench.txt"))
	require.NoError(t, err)
	defer f.Close()
	ratios, err := Parse(f)
	require.NoError(t, err)
	assert.Equal(t, []Ratio{
		{Benchmark: "BenchmarkLoadManifests/manifests=1", Unit: "toy/real", Values: []float64{5.046}},
		{Benchmark: "BenchmarkLoadManifests/manifests=100", Unit: "toy/real", Values: []float64{1.028}},
		{Benchmark: "BenchmarkLoadManifests/manifests=1000", Unit: "toy/real", Values: []float64{0.9886}},
		{Benchmark: "BenchmarkNewManifestVisible", Unit: "toy/real", Values: []float64{0.02389}},
		{Benchmark: "BenchmarkFetch", Unit: "client/bare-net-http", Values: []float64{0.9705}},
		{Benchmark: "BenchmarkPoll100", Unit: "HTTP2.0/HTTP1.1", Values: []float64{1.202}},
		{Benchmark: "BenchmarkDiscovery/nodes=1", Unit: "before/after", Values: []float64{6.218, 5.079}},
		{Benchmark: "BenchmarkDiscovery/nodes=1", Unit: "requests:before/after", Values: []float64{2, 2}},
		{Benchmark: "BenchmarkDiscovery/nodes=10", Unit: "before/after", Values: []float64{5.572, 5.894}},
		{Benchmark: "BenchmarkDiscovery/nodes=10", Unit: "requests:before/after", Values: []float64{11, 11}},
		{Benchmark: "BenchmarkDiscovery/nodes=100", Unit: "before/after", Values: []float64{6.449, 7.089}},
		{Benchmark: "BenchmarkDiscovery/nodes=100", Unit: "requests:before/after", Values: []float64{101, 101}},
	}, ratios)

	_, err = Parse(strings.NewReader("BenchmarkX/a-2   1   12 ns/op   1,5 x-a/b\n"))
	assert.ErrorContains(t, err, "BenchmarkX/a-2: 1,5 x-a/b")
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

func TestGoals(t *testing.T) {
	goals, err := Goals("| `BenchmarkFetch` | the client vs bare | 1.02×; goal ≤ 1.1× |\n" +
		"| `BenchmarkAllNodes` | 4 nodes vs 1 | goal <= 3× |\n" +
		"`BenchmarkFloor` must stay fast: goal ≥ 2×.\n" +
		"`BenchmarkLoadManifests` has no goal.\n")
	require.NoError(t, err)
	assert.Equal(t, map[string]Goal{
		"BenchmarkFetch":    {AtMost: true, Value: 1.1},
		"BenchmarkAllNodes": {AtMost: true, Value: 3},
		"BenchmarkFloor":    {AtMost: false, Value: 2},
	}, goals)

	_, err = Goals("`BenchmarkA` and `BenchmarkB`: goal ≤ 2×\n")
	assert.ErrorContains(t, err, "names 2 benchmarks, not one")
}

// The goals make bench reads are the note's own.
func TestGoalsOfTheNote(t *testing.T) {
	note, err := os.ReadFile(filepath.Join("..", "..", "..", "notes", "measurements.md"))
	require.NoError(t, err)
	goals, err := Goals(string(note))
	require.NoError(t, err)
	assert.Equal(t, map[string]Goal{
		"BenchmarkFetch":    {AtMost: true, Value: 1.1},
		"BenchmarkAllNodes": {AtMost: true, Value: 3},
	}, goals)
}

func TestSummarize(t *testing.T) {
	ratios := []Ratio{
		{Benchmark: "BenchmarkNewManifestVisible", Unit: "toy/real", Values: []float64{0.7879}},
		{Benchmark: "BenchmarkFetch", Unit: "client/bare-net-http", Values: []float64{1.031, 1.203, 1.05}},
		{Benchmark: "BenchmarkDiscovery/nodes=1", Unit: "requests:before/after", Values: []float64{2, 2}},
	}
	goals := map[string]Goal{"BenchmarkFetch": {AtMost: true, Value: 1.04}, "BenchmarkAllNodes": {AtMost: true, Value: 3}}
	var out bytes.Buffer
	missed, err := Summarize(&out, ratios, goals)
	require.NoError(t, err)
	assert.Equal(t, 1, missed)
	assert.Equal(t, `BENCHMARK                     RATIO                   MEASURED                       GOAL
BenchmarkNewManifestVisible   toy/real                0.788                          -
BenchmarkFetch                client/bare-net-http    1.05 (median of 3, 1.03–1.2)   ≤ 1.04: MISSED
BenchmarkDiscovery/nodes=1    requests:before/after   2 (2 runs)                     -
BenchmarkAllNodes             -                       not measured in this run       ≤ 3
`, out.String())
}

// benchsummary's command, on a file, against the real note.
func TestSummaryCommand(t *testing.T) {
	cmd := NewSummaryCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--goals", filepath.Join("..", "..", "..", "notes", "measurements.md"), filepath.Join("testdata", "bench.txt")})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, `
Side by side: the ratios the benchmarks reported (their x- metrics), against the goals of ../../../notes/measurements.md (- where it sets none).
BENCHMARK                               RATIO                   MEASURED                        GOAL
BenchmarkLoadManifests/manifests=1      toy/real                5.05                            -
BenchmarkLoadManifests/manifests=100    toy/real                1.03                            -
BenchmarkLoadManifests/manifests=1000   toy/real                0.989                           -
BenchmarkNewManifestVisible             toy/real                0.0239                          -
BenchmarkFetch                          client/bare-net-http    0.971                           ≤ 1.1: met
BenchmarkPoll100                        HTTP2.0/HTTP1.1         1.2                             -
BenchmarkDiscovery/nodes=1              before/after            5.65 (median of 2, 5.08–6.22)   -
BenchmarkDiscovery/nodes=1              requests:before/after   2 (2 runs)                      -
BenchmarkDiscovery/nodes=10             before/after            5.73 (median of 2, 5.57–5.89)   -
BenchmarkDiscovery/nodes=10             requests:before/after   11 (2 runs)                     -
BenchmarkDiscovery/nodes=100            before/after            6.77 (median of 2, 6.45–7.09)   -
BenchmarkDiscovery/nodes=100            requests:before/after   101 (2 runs)                    -
BenchmarkAllNodes                       -                       not measured in this run        ≤ 3
`, out.String())
}

// A ratio that misses its goal is marked, and counted at the end.
func TestSummaryCommandMissed(t *testing.T) {
	note := filepath.Join(t.TempDir(), "goals.md")
	require.NoError(t, os.WriteFile(note, []byte("| `BenchmarkFetch` | client vs bare | goal ≤ 0.5× |\n| `BenchmarkPoll100` | HTTP/2 vs HTTP/1.1 | goal ≥ 2× |\n"), 0o644))
	cmd := NewSummaryCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--goals", note, filepath.Join("testdata", "bench.txt")})
	require.NoError(t, cmd.Execute())
	assert.Contains(t, out.String(), "BenchmarkFetch                          client/bare-net-http    0.971                           ≤ 0.5: MISSED\n")
	assert.Contains(t, out.String(), "BenchmarkPoll100                        HTTP2.0/HTTP1.1         1.2                             ≥ 2: MISSED\n")
	assert.True(t, strings.HasSuffix(out.String(), "\n2 ratios missed their goal (one run on a busy machine can be 10–30 % off: see the note before believing it).\n"), out.String())
}
