package notes

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// driftShape is what the drift note must be, in each language: who the seed notes are, the
// interface before and after, the seed notes' points answered in order, then the history.
type driftShape struct {
	file                                 string
	seed, iface, points, history, quoted string
}

var (
	numberedPoint = regexp.MustCompile(`(?m)^### (\d+)\. `)
	attribution   = regexp.MustCompile(`[(（].*[)）]\s*$`)
)

// TestDriftAnswersEachPoint: the drift note names what it answers before answering it, leads with
// the interface, then answers each point of the seed notes under its own numbered heading that
// opens with the point quoted and where the quote comes from, and only then gives the history.
func TestDriftAnswersEachPoint(t *testing.T) {
	var counts []int
	for _, d := range []driftShape{
		{"drift.md", "## The seed notes\n", "## The interface, before and after\n", "## The seed notes' points, in order\n", "## History: ", "as this note recorded the seed notes"},
		{"zh/drift.md", "## 原笔记\n", "## 接口：之前与之后\n", "## 原笔记各点，按顺序回答\n", "## 历史：", "本文当初记下的原笔记内容"},
	} {
		data, err := os.ReadFile(d.file)
		require.NoError(t, err)
		text := string(data)
		at := func(h string) int {
			i := strings.Index(text, h)
			require.GreaterOrEqual(t, i, 0, "%s has the section %q", d.file, strings.TrimSpace(h))
			return i
		}
		seed, iface, points, history := at(d.seed), at(d.iface), at(d.points), at(d.history)
		assert.True(t, seed < iface && iface < points && points < history, "%s: who the seed notes are, the interface, the points, then the history", d.file)
		assert.Contains(t, text[iface:points], "```go\ntype Bootstrap interface {", "%s leads with the interface the seed notes quote", d.file)
		section := text[points:history]
		heads := numberedPoint.FindAllStringSubmatchIndex(section, -1)
		require.NotEmpty(t, heads, "%s answers the points under numbered headings", d.file)
		for i, h := range heads {
			n, _ := strconv.Atoi(section[h[2]:h[3]])
			assert.Equal(t, i+1, n, "%s: the points are numbered in order", d.file)
			end := len(section)
			if i+1 < len(heads) {
				end = heads[i+1][0]
			}
			body := strings.SplitN(section[h[1]:end], "\n", 2)[1]
			var quote []string
			for _, l := range strings.Split(strings.TrimLeft(body, "\n"), "\n") {
				if !strings.HasPrefix(l, "> ") {
					break
				}
				quote = append(quote, strings.TrimPrefix(l, "> "))
			}
			if assert.NotEmpty(t, quote, "%s: point %d opens with the point quoted", d.file, n) {
				assert.Regexp(t, attribution, quote[len(quote)-1], "%s: point %d says where its quote comes from", d.file, n)
			}
		}
		assert.Contains(t, section, d.quoted, "%s attributes what only this note recorded", d.file)
		counts = append(counts, len(heads))
	}
	assert.Equal(t, counts[0], counts[1], "the same points in both languages")
}
