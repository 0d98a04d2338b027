package notescheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A note may cite lines of this repository's own chapter code the way it cites kubernetes:
// [`func manifestsWritten(ctx context.Context, n Node) (time.Time, error) {`](../chapters/12-node/bootstory/story.go#L201-L220).
// The text is one code span naming what the lines hold, and the two rules of citations.go apply
// unchanged.
var chapterCitation = regexp.MustCompile("\\[`([^`]+)`\\]\\(((?:\\.\\./)+chapters/[^)#\\s]+)#L(\\d+)(?:-L(\\d+))?\\)")

// chapterCitations finds the line citations of chapter code in one note, resolved against the
// note's directory.
func chapterCitations(note string, data []byte) []Citation {
	var cites []Citation
	text := string(data)
	for _, m := range chapterCitation.FindAllStringSubmatchIndex(text, -1) {
		c := Citation{
			Where:  fmt.Sprintf("%s:%d", note, 1+strings.Count(text[:m[0]], "\n")),
			Path:   filepath.Join(filepath.Dir(note), text[m[4]:m[5]]),
			Symbol: text[m[2]:m[3]],
		}
		c.From, _ = strconv.Atoi(text[m[6]:m[7]])
		c.To = c.From
		if m[8] >= 0 {
			c.To, _ = strconv.Atoi(text[m[8]:m[9]])
		}
		cites = append(cites, c)
	}
	return cites
}

// checkChapterCitation holds a citation of chapter code to the rules kubernetes citations follow.
func checkChapterCitation(s *Source, c Citation) error {
	if _, err := os.Stat(c.Path); err != nil {
		return fmt.Errorf("%s: %s: no such file in this repository", c.Where, c)
	}
	src, err := s.load(c.Path)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.Where, c, err)
	}
	if c.From < 1 || c.To < c.From || c.To > len(src.lines) {
		return fmt.Errorf("%s: %s: lines out of range, the file has %d lines", c.Where, c, len(src.lines))
	}
	if d, ok := parseDecl(c.Symbol); ok && src.file != nil && len(src.decls(d)) > 0 {
		return s.checkDecl(c, src, d)
	}
	return s.checkText(c, src)
}

// TestChapterCitations: every line citation of chapter code in the notes (both languages) names
// the lines it says, so that a note cannot keep pointing at code that moved.
func TestChapterCitations(t *testing.T) {
	notes, err := filepath.Glob("*.md")
	require.NoError(t, err)
	zh, err := filepath.Glob("zh/*.md")
	require.NoError(t, err)
	src := NewSource("this repository", "this repository")
	checked := 0
	for _, note := range append(notes, zh...) {
		data, err := os.ReadFile(note)
		require.NoError(t, err)
		for _, c := range chapterCitations(note, data) {
			checked++
			if err := checkChapterCitation(src, c); err != nil {
				t.Error(err)
			}
		}
	}
	t.Logf("%d citations of chapter code checked", checked)
	require.Positive(t, checked, "the notes cite chapter code with line ranges (12-node.md does)")
}

// stepCitation is one step of chapter 03's table: the lines of run it covers.
var stepCitation = regexp.MustCompile(`"(cmd/kubelet/app/server\.go)#L(\d+)(?:-L(\d+))? \(`)

// TestNote03CitesTheChapterSteps: for every step of chapter 03's step table, note 03 (both
// languages) links exactly the range the chapter prints, so a reader comparing the chapter's
// output with the note sees the same lines.
func TestNote03CitesTheChapterSteps(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "chapters", "03-run", "steps.go"))
	require.NoError(t, err)
	steps := stepCitation.FindAllStringSubmatch(string(data), -1)
	require.Greater(t, len(steps), 20, "chapter 03's step table cites run step by step")
	for _, note := range []string{"03-run.md", filepath.Join("zh", "03-run.md")} {
		text, err := os.ReadFile(note)
		require.NoError(t, err)
		for _, m := range steps {
			rng := "#L" + m[2]
			if m[3] != "" && m[3] != m[2] {
				rng += "-L" + m[3]
			}
			link := "https://github.com/kubernetes/kubernetes/blob/v1.37.2/" + m[1] + rng + ")"
			assert.Contains(t, string(text), link, "%s does not cite chapter 03's step %s%s", note, m[1], rng)
		}
	}
}
