package notescheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	heading   = regexp.MustCompile(`(?m)^(#{2,3}) `)
	pinnedURL = regexp.MustCompile(`\]\((https://github\.com/kubernetes/kubernetes/[^)]+)\)`)
	linkText  = regexp.MustCompile("\\[(`[^`]+`)\\]\\(https://github\\.com/kubernetes/kubernetes/")
)

// outline is what a translation must keep: the section structure and every citation.
type outline struct {
	headings  []string // "##" or "###", in order
	citations []string // pinned URLs, sorted
	symbols   []string // the code spans that name what each citation holds, sorted
}

func outlineOf(text string) outline {
	var o outline
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		o.headings = append(o.headings, m[1])
	}
	for _, m := range pinnedURL.FindAllStringSubmatch(text, -1) {
		o.citations = append(o.citations, m[1])
	}
	for _, m := range linkText.FindAllStringSubmatch(text, -1) {
		o.symbols = append(o.symbols, m[1])
	}
	slices.Sort(o.citations)
	slices.Sort(o.symbols)
	return o
}

// TestTranslations: every English note has its Chinese translation in zh/, linked both ways,
// with the same sections and the same citations (the Chinese text cites the same lines).
func TestTranslations(t *testing.T) {
	english, err := filepath.Glob("*.md")
	require.NoError(t, err)
	require.NotEmpty(t, english)
	for _, en := range english {
		t.Run(en, func(t *testing.T) {
			zh := filepath.Join("zh", en)
			enText, err := os.ReadFile(en)
			require.NoError(t, err)
			zhText, err := os.ReadFile(zh)
			require.NoError(t, err, "%s has no translation at %s", en, zh)
			assert.Contains(t, string(enText), "(zh/"+en+")", "%s links its translation", en)
			assert.Contains(t, string(zhText), "(../"+en+")", "%s links back to %s", zh, en)
			e, z := outlineOf(string(enText)), outlineOf(string(zhText))
			assert.Equal(t, e.headings, z.headings, "the same sections, in order")
			assert.Equal(t, e.citations, z.citations, "the same citations")
			assert.Equal(t, e.symbols, z.symbols, "the same cited symbols")
			assert.True(t, strings.ContainsAny(string(zhText), "的是了在"), "%s is in Chinese", zh)
		})
	}
	translations, err := filepath.Glob("zh/*.md")
	require.NoError(t, err)
	for _, zh := range translations {
		_, err := os.Stat(filepath.Base(zh))
		assert.NoError(t, err, "%s translates no English note", zh)
	}
}
