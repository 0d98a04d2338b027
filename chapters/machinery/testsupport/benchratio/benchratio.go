// Package benchratio is for side-by-side benchmarks — two variants of one thing measured in one
// run, such as the toy and the real kubelet — and for reading what they report.
//
// Each side records its measurement in a Sides; the side that runs last reports the ratio with
// b.ReportMetric, as a metric whose unit starts with "x-": "x-toy/real" is the toy's time per
// operation over the real kubelet's. The ratio is then in go test's own output, where benchstat
// reads it too. `make bench` runs every benchmark several times (-count) and ends with a summary
// (Summarize): for every ratio, each side's median and interval over its runs, the ratio of the
// medians, and the goal notes/measurements.md sets for it, judged met or missed only when the
// runs' spread allows (Goal.Judge); a ratio without one is listed as having no goal in the note.
//
// A ratio divides a measurement by a measurement of the same run, never by a constant. Chapter
// 12's old BenchmarkNodeStart (removed with the chapter's node package, then chapters/09-node/node) reported x-minikube-speed as
// a constant 60 s — minikube's "about a minute" on a laptop, a figure from its documentation and
// issue 11, not measured here — over the node's measured start: a number that moved with one
// side only, on a machine that never ran the other. A figure from elsewhere belongs beside the
// measurement, with its source, as notes/measurements.md quotes minikube's; a ratio needs both
// sides measured here.
package benchratio

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Prefix starts the unit of every ratio metric.
const Prefix = "x-"

// Sides holds what each side of one comparison measured, by label. A label is the side's
// sub-benchmark name with any "/" removed ("HTTP/1.1" becomes "HTTP1.1"), since a "/" in the
// unit separates the two sides. Sub-benchmarks run one after the other, so a Sides needs no lock.
//
// With -count=N go test runs each side N times in a row (the first side N times, then the
// second), so the side that reports compares each of its runs with the median of the other
// side's runs.
type Sides struct {
	// Of names what is compared when it is not the time per operation, e.g. "requests":
	// the unit becomes "x-requests:before/after". Each side then also reports what it set with
	// b.ReportMetric, under a unit that holds the word ("apiserver-requests/poll"): the summary
	// reads each side's runs from there, as it reads ns/op for a time.
	Of       string
	measured map[string][]float64
	last     string
}

// Time records the time per operation of b, which has just measured side, as go test reports it
// (ns/op). Call it after b's loop.
func (s *Sides) Time(b *testing.B, side string) {
	if b.N > 0 {
		s.Set(side, float64(b.Elapsed().Nanoseconds())/float64(b.N))
	}
}

// Set records a value that side has just measured.
func (s *Sides) Set(side string, value float64) {
	if s.measured == nil {
		s.measured = map[string][]float64{}
	}
	s.measured[side] = append(s.measured[side], value)
	s.last = side
}

// Report reports on b the ratio of num's measurement to den's, as the metric Unit(s.Of, num,
// den): the side recorded last (b's) with the value it has just measured, the other with the
// median of its runs. A side that did not run (a -bench pattern left it out, or it was skipped)
// leaves the ratio out, and so does a zero denominator: there is nothing to compare.
func (s *Sides) Report(b *testing.B, num, den string) {
	n, okNum := s.value(num)
	d, okDen := s.value(den)
	if !okNum || !okDen || d == 0 {
		return
	}
	b.ReportMetric(n/d, Unit(s.Of, num, den))
}

func (s *Sides) value(side string) (float64, bool) {
	values := s.measured[side]
	switch {
	case len(values) == 0:
		return 0, false
	case side == s.last:
		return values[len(values)-1], true
	}
	return Median(values), true
}

// Median is the middle value (the mean of the two middle values of an even count).
func Median(values []float64) float64 {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 0 {
		return (sorted[mid-1] + sorted[mid]) / 2
	}
	return sorted[mid]
}

// Unit is the unit of the ratio of num to den: "x-num/den", or "x-of:num/den" when the ratio is
// of something other than time per operation. Labels may not hold "/", ":" or spaces.
func Unit(of, num, den string) string {
	for _, label := range []string{of, num, den} {
		if strings.ContainsAny(label, "/: \t\n") {
			panic(fmt.Sprintf("benchratio: label %q holds a '/', ':' or a space", label))
		}
	}
	if of != "" {
		return Prefix + of + ":" + num + "/" + den
	}
	return Prefix + num + "/" + den
}
