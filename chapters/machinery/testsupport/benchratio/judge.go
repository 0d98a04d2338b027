package benchratio

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Confidence is the level of each side's interval around its median: benchstat's default.
const Confidence = 0.95

// Spread is one side's runs as benchstat summarizes them (benchmath.AssumeNothing): the
// median, and a confidence interval for it that assumes nothing of the distribution. Fewer than
// six runs give no interval at 95 % (Lo and Hi are infinite).
type Spread struct {
	Runs           int
	Median, Lo, Hi float64
}

// SpreadOf summarizes one side's runs. It leaves values as they are.
func SpreadOf(values []float64) Spread {
	if len(values) == 0 {
		return Spread{Lo: math.Inf(-1), Hi: math.Inf(1)}
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds), Confidence)
	return Spread{Runs: len(values), Median: s.Center, Lo: s.Lo, Hi: s.Hi}
}

// Percent is the interval's widest side as a share of the median, as benchstat prints it
// ("±3%"); +Inf when there is no interval.
func (s Spread) Percent() float64 {
	switch {
	case math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0):
		return math.Inf(1)
	case s.Median == 0:
		return 0
	}
	return 100 * math.Max(s.Hi/s.Median-1, 1-s.Lo/s.Median)
}

// Verdict is what a summary says of a ratio against its goal.
type Verdict string

const (
	Met    Verdict = "met"
	Missed Verdict = "missed"
	// Inconclusive: the runs do not tell the ratio from the goal, because they scatter too
	// widely for their number, or sit too close to the goal.
	Inconclusive Verdict = "inconclusive"
)

// Judgement is a verdict and what it rests on.
type Judgement struct {
	Verdict Verdict
	// P is the p-value of the Mann–Whitney U test (benchstat's) of the numerator's runs against
	// the denominator's scaled by the goal: the chance of runs this far apart if both came from
	// one distribution. A verdict other than Inconclusive needs P ≤ Alpha. 0 when Exact.
	P float64
	// Exact: each side ran at least twice and gave the same value every time (a count of
	// requests, not a time), so the medians' ratio is compared with the goal as it is.
	Exact bool
}

// Alpha is the level at or under which a difference counts: benchstat's default, 0.05.
var Alpha = benchmath.DefaultThresholds.CompareAlpha

// Judge holds the ratio of num's runs to den's to the goal. One run of each side proves
// nothing either way: a goal is met (or missed) only when the numerator's runs are significantly
// below (above) the goal times the denominator's, the test benchstat uses to say two sets of
// runs differ; otherwise the verdict is Inconclusive.
func (g Goal) Judge(num, den []float64) Judgement {
	if len(num) == 0 || len(den) == 0 {
		return Judgement{Verdict: Inconclusive, P: 1}
	}
	scaled := make([]float64, len(den))
	for i, d := range den {
		scaled[i] = d * g.Value
	}
	ratio := SpreadOf(num).Median / SpreadOf(den).Median
	verdict := Missed
	if g.Met(ratio) {
		verdict = Met
	}
	if len(num) >= 2 && len(den) >= 2 && constant(num) && constant(den) {
		return Judgement{Verdict: verdict, Exact: true}
	}
	c := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(num), &benchmath.DefaultThresholds),
		benchmath.NewSample(scaled, &benchmath.DefaultThresholds))
	if c.P > Alpha {
		return Judgement{Verdict: Inconclusive, P: c.P}
	}
	return Judgement{Verdict: verdict, P: c.P}
}

func constant(values []float64) bool {
	return slices.Min(values) == slices.Max(values)
}
