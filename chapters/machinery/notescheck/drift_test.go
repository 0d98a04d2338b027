package notescheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// notesTitle is the title of the reading notes the drift note answers: the name a reader can
// look them up by.
const notesTitle = "【k8s读书笔记】Kubelet - 1"

// notesSourceFile is their text, in the sources CI lays out beside the clone: shared/sources/,
// next to the repository's root. It is not in the repository; readers do not have it.
const notesSourceFile = "k8s-reading-notes-kubelet-1.zh.txt"

// driftShape is where the drift note quotes the notes, in each language: the interface before
// and after, their points answered in order up to the history. A point's quote says it is the
// notes' own with fromNotes.
type driftShape struct {
	file                   string
	iface, points, history string
	fromNotes              string
}

var driftShapes = []driftShape{
	{
		"drift.md", "## The interface, before and after\n", "## The notes' points, in order\n", "## History: ",
		"from " + notesTitle,
	},
	{
		"zh/drift.md", "## 接口：之前与之后\n", "## 笔记各点，按顺序回答\n", "## 历史：",
		"出自《" + notesTitle + "》",
	},
}

var (
	numberedPoint = regexp.MustCompile(`(?m)^### (\d+)\. `)
	// theirWords is how the drift note marks the notes' own words: 「…」, exactly as they wrote them.
	theirWords = regexp.MustCompile(`「([^」\n]*)」`)
	quotedSpan = regexp.MustCompile("`([^`\n]+)`")
	whitespace = regexp.MustCompile(`\s+`)
	goBlock    = regexp.MustCompile("(?ms)^```go\\n(.*?)^```")
)

// driftPoint is one numbered point of the drift note: its number and the quote it opens with.
type driftPoint struct {
	n     int
	quote string // the blockquote's lines, without "> ", joined by newlines
}

// pointsOf reads the numbered points of the points section and the quote each opens with.
func pointsOf(section string) []driftPoint {
	var out []driftPoint
	heads := numberedPoint.FindAllStringSubmatchIndex(section, -1)
	for i, h := range heads {
		n, _ := strconv.Atoi(section[h[2]:h[3]])
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
		out = append(out, driftPoint{n, strings.Join(quote, "\n")})
	}
	return out
}

// repoRoot is the repository's root: the directory of go.mod, above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test's directory")
		dir = parent
	}
}

// notesSource reads the notes' text from the sources beside the repository. The tier is
// promised where the sources are laid out (the maintainers' CI): without the directory (a
// reader's clone, a contributor's fork and its CI) the test skips, saying how to get the text;
// with it, a missing or unreadable text skips elsewhere and fails under CI=true.
func notesSource(t *testing.T) string {
	t.Helper()
	return notesSourceIn(t, filepath.Join(repoRoot(t), "..", "shared", "sources"))
}

func notesSourceIn(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, notesSourceFile)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		t.Skipf("tier sources: no %s beside the repository, so the quotes of %q are not checked here (CI=true does not promise this tier without it): "+
			"to check them, save that text as %s", dir, notesTitle, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		why := err
		if errors.Is(err, os.ErrNotExist) {
			why = fmt.Errorf("the text of %q is not beside the repository (%s): %w", notesTitle, path, err)
		}
		tier.Unavailable(t, "sources", why)
	}
	return string(data)
}

func lineAt(text string, k int) int { return 1 + strings.Count(text[:k], "\n") }

// quoteViolations returns each quote in a drift note that is not in the notes' text: every
// 「…」 anywhere, word for word; every code span of a point's quote attributed to the notes, and
// every line of the interface they quote, with runs of white space taken as one space.
func quoteViolations(d driftShape, text, source string) []string {
	var out []string
	flat := whitespace.ReplaceAllString(source, " ")
	for _, m := range theirWords.FindAllStringSubmatchIndex(text, -1) {
		if q := text[m[2]:m[3]]; !strings.Contains(source, q) {
			out = append(out, fmt.Sprintf("%s:%d: 「%s」 is not in the notes' text", d.file, lineAt(text, m[0]), q))
		}
	}
	if i, j := strings.Index(text, d.iface), strings.Index(text, d.points); i >= 0 && j > i {
		if m := goBlock.FindStringSubmatch(text[i:j]); m != nil {
			for _, l := range strings.Split(m[1], "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.Contains(flat, whitespace.ReplaceAllString(l, " ")) {
					out = append(out, fmt.Sprintf("%s: the interface's line %q is not in the notes' text", d.file, l))
				}
			}
		}
	}
	if i, j := strings.Index(text, d.points), strings.Index(text, d.history); i >= 0 && j > i {
		for _, p := range pointsOf(text[i:j]) {
			if !strings.Contains(p.quote, d.fromNotes) {
				continue
			}
			spans := quotedSpan.FindAllStringSubmatch(p.quote, -1)
			if len(spans) == 0 && !theirWords.MatchString(p.quote) {
				out = append(out, fmt.Sprintf("%s: point %d is attributed to the notes but quotes none of their words", d.file, p.n))
			}
			for _, s := range spans {
				if !strings.Contains(flat, whitespace.ReplaceAllString(s[1], " ")) {
					out = append(out, fmt.Sprintf("%s: point %d quotes `%s`, which is not in the notes' text", d.file, p.n, s[1]))
				}
			}
		}
	}
	return out
}

// TestDriftQuotesTheNotes: every quote the drift note gives as the notes' words is in their
// text, as they wrote it.
func TestDriftQuotesTheNotes(t *testing.T) {
	source := notesSource(t)
	assert.True(t, strings.HasPrefix(source, notesTitle), "the text in %s is the one titled %q", notesSourceFile, notesTitle)
	for _, d := range driftShapes {
		data, err := os.ReadFile(d.file)
		require.NoError(t, err)
		text := string(data)
		assert.NotEmpty(t, theirWords.FindAllString(text, -1), "%s quotes the notes' words", d.file)
		for _, v := range quoteViolations(d, text, source) {
			t.Error(v)
		}
	}
}

// TestQuoteCheckerCatches proves the check on a text of its own: a word changed in a quote, a
// code span the notes do not have, a line of the interface they did not write.
func TestQuoteCheckerCatches(t *testing.T) {
	d := driftShapes[0]
	source := notesTitle + "\n\n• Bootstrap定义了kubelet server的行为\n  port: 20250\n  evictionHard:\n      memory.available:  \"200Mi\"\ntype Bootstrap interface {\n\tBirthCry()\n}\n"
	note := func(quote, iface string) string {
		return d.iface + "\n```go\ntype Bootstrap interface {\n" + iface + "}\n```\n\n" + d.points + "\n### 1. A point\n\n> " + quote + "\n\nAnswer.\n\n" + d.history + "x\n"
	}
	tests := []struct {
		name, text string
		wantBad    string // empty: no violation
	}{
		{"their words, and spans white space aside", note("「Bootstrap定义了kubelet server的行为」, `port: 20250`, `evictionHard: memory.available: \"200Mi\"` ("+d.fromNotes+")", "\tBirthCry()\n"), ""},
		{"a word changed", note("「Bootstrap定义了kubelet的行为」 ("+d.fromNotes+")", "\tBirthCry()\n"), "「Bootstrap定义了kubelet的行为」 is not in"},
		{"a code span they do not have", note("`port: 10250` ("+d.fromNotes+")", "\tBirthCry()\n"), "quotes `port: 10250`"},
		{"attributed, with nothing quoted", note("the port ("+d.fromNotes+")", "\tBirthCry()\n"), "quotes none of their words"},
		{"not in their text: spans are not held", note("`go k.Run(podCfg.Updates())` (not in their text)", "\tBirthCry()\n"), ""},
		{"an interface line they did not write", note("「Bootstrap定义了kubelet server的行为」 ("+d.fromNotes+")", "\tBirthCry()\n\tRunOnce()\n"), "\"RunOnce()\" is not in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := quoteViolations(d, tt.text, source)
			if tt.wantBad == "" {
				assert.Empty(t, got)
				return
			}
			require.NotEmpty(t, got)
			assert.Contains(t, strings.Join(got, "\n"), tt.wantBad)
		})
	}
}

// A contributor's fork runs CI=true make test without the sources beside it: the tier skips,
// saying how to get the text, rather than failing a run that could never pass.
func TestSourcesTierSkipsWithoutTheSources(t *testing.T) {
	var skipped bool
	t.Run("CI=true, no sources directory", func(t *testing.T) {
		t.Setenv("CI", "true")
		t.Cleanup(func() { skipped = t.Skipped() })
		notesSourceIn(t, filepath.Join(t.TempDir(), "sources"))
	})
	assert.True(t, skipped, "the tier skips without the sources directory, under CI=true too")
}
