package podjourney

import (
	"strings"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/07-syncloop/gosource"
)

// selectCase says which case of a select (and of a switch inside it) holds a frame's line: for a
// frame in syncLoopIteration, which channel the sync loop took. It returns "" when the source is
// not there (a binary built with -trimpath, or moved to another machine).
func selectCase(frame Frame) string { return gosource.SelectCase(frame.Abs, frame.Line) }

// sourceText is the code on a frame's line, trimmed, cut so that its parentheses balance (a
// line that opens a call continued below keeps what comes before the open parenthesis). It is
// "" when the source is not there.
func sourceText(frame Frame) string {
	return balanced(strings.TrimSpace(gosource.Line(frame.Abs, frame.Line)))
}

// balanced cuts s before its first unmatched parenthesis.
func balanced(s string) string {
	var open []int
	for i, r := range s {
		switch r {
		case '(':
			open = append(open, i)
		case ')':
			if len(open) == 0 {
				return strings.TrimSpace(s[:i])
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return strings.TrimSpace(s[:open[0]])
	}
	return s
}
