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

// journeyWords are the Chinese words of the journey table for the English ones chapter 07
// prints (its phases and what a goroutine does); the names of goroutines and functions stay.
var journeyWords = map[string]string{
	"start": "启动", "add": "添加", "edit": "编辑", "delete": "删除",
	"creates": "创建", "calls": "调用", "wakes": "唤醒", "runs": "运行", "returns": "返回",
}

// journeyRows reads the rows of a journey table, after the header that starts with "| # |".
func journeyRows(t *testing.T, file, section string) (header string, rows [][]string) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	_, text, found := strings.Cut(string(data), "\n## "+section+"\n")
	require.True(t, found, "%s has a section %q", file, section)
	text, _, _ = strings.Cut(text, "\n## ")
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "| # |"):
			header = line
		case strings.HasPrefix(line, "| ---"):
		case strings.HasPrefix(line, "| "):
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "| "), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			rows = append(rows, cells)
		}
	}
	require.NotEmpty(t, rows, "%s: the journey table has rows", file)
	return header, rows
}

// TestJourneyTableTranslated: the Chinese note's journey table is the English one, row for row,
// with its header, phases and actions in Chinese and every name unchanged.
func TestJourneyTableTranslated(t *testing.T) {
	_, en := journeyRows(t, "07-syncloop.md", "The journey, step by step")
	header, zh := journeyRows(t, "zh/07-syncloop.md", "旅程，一步一步")
	assert.Equal(t, "| # | 阶段 | goroutine | 动作 | 对象 | 经由 |", header)
	require.Len(t, zh, len(en), "the same steps")
	for i, row := range en {
		want := slices.Clone(row)
		for _, c := range []int{1, 3} {
			w, ok := journeyWords[row[c]]
			require.True(t, ok, "no Chinese word for %q", row[c])
			want[c] = w
		}
		assert.Equal(t, want, zh[i], "step %s", row[0])
	}
}

// englishOnly names, for each top-level part of the repository a Chinese note may link, how
// zh/README.md names it when it says what is in English only.
var englishOnly = map[string]string{
	"chapters":  "`chapters/`",
	"examples":  "`examples/`",
	"README.md": "`README.md`",
	"Makefile":  "`Makefile`",
	".ci":       "`.ci/`",
}

// TestChineseReadmeSaysWhatIsEnglish: every part of the repository outside notes/ that a Chinese
// note links is English only, and zh/README.md says so, naming it, in its section on languages.
func TestChineseReadmeSaysWhatIsEnglish(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("zh", "README.md"))
	require.NoError(t, err)
	_, section, found := strings.Cut(string(data), "\n## 语言：哪些页面只有英文\n")
	require.True(t, found, "zh/README.md has a section on which pages are English only")
	section, _, _ = strings.Cut(section, "\n## ")
	notes, err := filepath.Glob(filepath.Join("zh", "*.md"))
	require.NoError(t, err)
	linked := map[string]string{}
	for _, note := range notes {
		text, err := os.ReadFile(note)
		require.NoError(t, err)
		for _, m := range relativeLink.FindAllStringSubmatch(string(text), -1) {
			target, ok := strings.CutPrefix(m[1]+m[2], "../../")
			if !ok {
				continue
			}
			top, _, _ := strings.Cut(target, "/")
			top, _, _ = strings.Cut(top, "#")
			linked[top] = note
		}
	}
	require.NotEmpty(t, linked, "the Chinese notes link chapters")
	for top, note := range linked {
		name, known := englishOnly[top]
		if assert.True(t, known, "%s links %s, which englishOnly does not name", note, top) {
			assert.Contains(t, section, name, "zh/README.md does not say that %s is English only (%s links it)", top, note)
		}
	}
}
