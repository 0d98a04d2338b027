package notescheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	glossaryHeading = regexp.MustCompile(`(?m)^### (.+)$`)
	readingLink     = regexp.MustCompile(`\]\(([\w.-]+\.md)\)`)
	markdownAnyLink = regexp.MustCompile(`\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)`)
	linkTargetOnly  = regexp.MustCompile(`\]\([^)\s]*\)`)
	headingLine     = regexp.MustCompile(`(?m)^#+ .*$`)
)

// slug is the anchor GitHub gives a heading: lower case, punctuation dropped, spaces as dashes.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// glossaryTerms reads the terms a glossary defines, one "### term" each.
func glossaryTerms(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var terms []string
	for _, m := range glossaryHeading.FindAllStringSubmatch(string(data), -1) {
		terms = append(terms, strings.TrimSpace(m[1]))
	}
	require.NotEmpty(t, terms, "%s defines its terms under ### headings", file)
	return terms
}

// readingOrder is every note the README of a directory of notes links, in the order it links them
// first. The README itself, the map, links the glossary as a whole.
func readingOrder(t *testing.T, dir string) []string {
	t.Helper()
	readme := filepath.Join(dir, "README.md")
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	var order []string
	seen := map[string]bool{readme: true}
	for _, m := range readingLink.FindAllStringSubmatch(string(data), -1) {
		f := filepath.Join(dir, m[1])
		if seen[f] || filepath.Base(f) == "glossary.md" {
			continue
		}
		if _, err := os.Stat(f); err == nil {
			seen[f] = true
			order = append(order, f)
		}
	}
	require.Greater(t, len(order), 10, "%s links the notes in reading order", readme)
	assert.True(t, strings.Contains(string(data), "(glossary.md)"), "%s links the glossary", readme)
	return order
}

// readable blanks, keeping every offset, what a reader does not read as prose: code blocks and
// diagrams, code spans, link targets and URLs, and headings (a title names a term; the prose
// under it is where the term is first used).
func readable(text string) string {
	keep := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, s)
	}
	out := []byte(text)
	for _, re := range []*regexp.Regexp{fencedAny, headingLine, codeSpanAny, linkTargetOnly, bareURL} {
		for _, m := range re.FindAllStringIndex(string(out), -1) {
			copy(out[m[0]:m[1]], keep(string(out[m[0]:m[1]])))
		}
	}
	return string(out)
}

// termPattern matches a term as prose uses it: a lower-case term in any case and in the plural,
// an acronym or a Chinese term exactly.
func termPattern(term string) *regexp.Regexp {
	q := regexp.QuoteMeta(term)
	if term == strings.ToLower(term) && term[0] < 0x80 {
		return regexp.MustCompile(`(?i)\b` + q + `s?\b`)
	}
	if term[0] < 0x80 && !strings.Contains(term, " ") {
		return regexp.MustCompile(`\b` + q + `s?\b`)
	}
	return regexp.MustCompile(q)
}

// firstUseViolations checks, for each term, the first note in order that uses it: its first use
// must be the text of a link to the term's entry in the glossary (glossary.md#anchor, relative
// to the note). Links to anchors the glossary does not have are reported wherever they are.
func firstUseViolations(terms []string, notes []string, read func(string) string) []string {
	anchors := map[string]string{}
	for _, tm := range terms {
		anchors[slug(tm)] = tm
	}
	var out []string
	for _, note := range notes {
		for _, l := range markdownAnyLink.FindAllStringSubmatch(read(note), -1) {
			file, anchor, found := strings.Cut(l[2], "#")
			if filepath.Base(file) == "glossary.md" && found && anchors[anchor] == "" {
				out = append(out, fmt.Sprintf("%s links %s, which the glossary does not define", note, l[2]))
			}
		}
	}
	for _, tm := range terms {
		re := termPattern(tm)
		for _, note := range notes {
			text := read(note)
			at := re.FindStringIndex(readable(text))
			if at == nil {
				continue
			}
			linked := false
			for _, l := range markdownAnyLink.FindAllStringSubmatchIndex(text, -1) {
				target := text[l[4]:l[5]]
				if l[2] <= at[0] && at[1] <= l[3] && filepath.Base(target) == "glossary.md#"+slug(tm) {
					linked = true
				}
			}
			if !linked {
				out = append(out, fmt.Sprintf("%s:%d: first use of %q in reading order: link it to glossary.md#%s", note, lineAt(text, at[0]), tm, slug(tm)))
			}
			break
		}
	}
	return out
}

// TestTermsLinkedAtFirstUse: reading the notes in the README's order, in either language, the first
// use of each glossary term links its definition.
func TestTermsLinkedAtFirstUse(t *testing.T) {
	read := func(f string) string {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		return string(data)
	}
	en, zh := glossaryTerms(t, "glossary.md"), glossaryTerms(t, filepath.Join("zh", "glossary.md"))
	assert.Len(t, zh, len(en), "the Chinese glossary defines the same terms")
	for _, v := range firstUseViolations(en, readingOrder(t, "."), read) {
		t.Error(v)
	}
	for _, v := range firstUseViolations(zh, readingOrder(t, "zh"), read) {
		t.Error(v)
	}
}

// TestFirstUseCheckerCatches proves the check on two small notes.
func TestFirstUseCheckerCatches(t *testing.T) {
	terms := []string{"sync loop", "PLEG", "静态 Pod"}
	tests := []struct {
		name, a, b string
		want       string // empty: no violation
	}{
		{"linked at first use", "The [sync loop](glossary.md#sync-loop) runs.", "The sync loop again.", ""},
		{"first use unlinked, a later one linked", "The sync loop runs.", "The [sync loop](glossary.md#sync-loop).", `a.md:1: first use of "sync loop"`},
		{"plural and capitals", "Sync loops run.", "", `first use of "sync loop"`},
		{"code is not a use", "`syncLoop` and `sync loop` run.", "The sync loop.", `b.md:1: first use of "sync loop"`},
		{"a diagram is not a use", "```mermaid\nflowchart LR\n  a[\"PLEG\"]\n```\n", "[PLEG](glossary.md#pleg) events.", ""},
		{"an acronym inside a word is not a use", "PLEGOnDemandRelist is GA.", "PLEG.", `b.md:1: first use of "PLEG"`},
		{"a Chinese term", "一个[静态 Pod](glossary.md#静态-pod)。", "静态 Pod。", ""},
		{"a Chinese term unlinked", "一个静态 Pod。", "", `first use of "静态 Pod"`},
		{"a link to the wrong entry", "The [sync loop](glossary.md#pleg) runs.", "", `first use of "sync loop"`},
		{"a heading is not a use", "# The sync loop\n\nIt runs.", "The [sync loop](glossary.md#sync-loop).", ""},
		{"an anchor the glossary lacks", "See [it](glossary.md#pod-worker).", "", "which the glossary does not define"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"a.md": tt.a, "b.md": tt.b}
			got := firstUseViolations(terms, []string{"a.md", "b.md"}, func(f string) string { return files[f] })
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			require.NotEmpty(t, got)
			assert.Contains(t, strings.Join(got, "\n"), tt.want)
		})
	}
}
