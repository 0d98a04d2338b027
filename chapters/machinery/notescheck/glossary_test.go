package notescheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// term is one row of zh/glossary.md: the English term(s), the fixed Chinese translation, and
// the spellings no note may use instead.
type term struct {
	english   []string
	chinese   string
	forbidden []string // spelled out in the glossary, plus the English term where it is translated
	alone     []string // "单独的“X”": X may appear only as part of a fixed translation
}

var (
	glossaryRow = regexp.MustCompile(`(?m)^\|([^|\n]*)\|([^|\n]*)\|([^|\n]*)\|`)
	aloneItem   = regexp.MustCompile(`^单独的“(.+)”$`)
)

// loadGlossary reads the table of zh/glossary.md.
func loadGlossary(t *testing.T) []term {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("zh", "glossary.md"))
	require.NoError(t, err)
	var terms []term
	for _, m := range glossaryRow.FindAllStringSubmatch(string(data), -1) {
		m[1], m[2] = strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
		if m[1] == "English" || strings.HasPrefix(m[1], "---") {
			continue
		}
		tm := term{chinese: strings.TrimSpace(m[2])}
		for _, e := range strings.Split(m[1], " / ") {
			tm.english = append(tm.english, strings.TrimSpace(e))
		}
		for _, f := range strings.Split(m[3], "、") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			if a := aloneItem.FindStringSubmatch(f); a != nil {
				tm.alone = append(tm.alone, a[1])
			} else {
				tm.forbidden = append(tm.forbidden, f)
			}
		}
		// An English term with a Chinese translation is not written in English in the prose.
		for _, e := range tm.english {
			if !strings.Contains(strings.ToLower(tm.chinese), strings.ToLower(e)) {
				tm.forbidden = append(tm.forbidden, e, e+"s")
			}
		}
		terms = append(terms, tm)
	}
	require.NotEmpty(t, terms, "the glossary has a table of terms")
	return terms
}

var (
	fencedAny    = regexp.MustCompile("(?ms)^```(\\w*)\\n(.*?)^```")
	quotedLabel  = regexp.MustCompile(`"([^"\n]*)"`)
	codeSpanAny  = regexp.MustCompile("`[^`\n]*`")
	linkTarget   = regexp.MustCompile(`\]\([^)\s]*\)`)
	bareURL      = regexp.MustCompile(`https?://\S+`)
	asciiQuote   = regexp.MustCompile(`"[ -~\n…]*?"|“[ -~\n…]*?”`)
	asciiGloss   = regexp.MustCompile(`（[ -~]+?）`)
	mermaidClick = regexp.MustCompile(`(?m)^\s*click .*$`)
)

// prose is what a reader reads as Chinese text: code blocks and spans, link targets, URLs,
// quoted English and English glosses in full-width parentheses are blanked out; of a mermaid
// diagram only the labels are kept. Line breaks stay where they were, so that line numbers hold.
func prose(text string) string {
	text = fencedAny.ReplaceAllStringFunc(text, func(block string) string {
		m := fencedAny.FindStringSubmatch(block)
		if m[1] != "mermaid" {
			return blank(block)
		}
		var labels []string
		for _, l := range quotedLabel.FindAllStringSubmatch(mermaidClick.ReplaceAllString(m[2], ""), -1) {
			labels = append(labels, l[1])
		}
		return strings.Join(labels, " ") + blank(block)
	})
	for _, re := range []*regexp.Regexp{codeSpanAny, linkTarget, bareURL, asciiQuote, asciiGloss} {
		text = re.ReplaceAllStringFunc(text, blank)
	}
	return text
}

// blank keeps only the line breaks of s.
func blank(s string) string { return " " + strings.Repeat("\n", strings.Count(s, "\n")) }

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// occurrences of s in text; an ASCII s must stand as a word of its own.
func findAll(text, s string) []int {
	var at []int
	ascii := s != "" && s[0] < 0x80
	for i := 0; ; {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return at
		}
		k := i + j
		if !ascii || ((k == 0 || !isWordByte(text[k-1])) && (k+len(s) == len(text) || !isWordByte(text[k+len(s)]))) {
			at = append(at, k)
		}
		i = k + len(s)
	}
}

// lineAt is the 1-based line of byte offset k.
func lineAt(text string, k int) int { return 1 + strings.Count(text[:k], "\n") }

// glossaryViolations returns what in one note's prose breaks the glossary.
func glossaryViolations(terms []term, file, text string) []string {
	p := prose(text)
	var out []string
	for _, tm := range terms {
		for _, f := range tm.forbidden {
			for _, k := range findAll(p, f) {
				out = append(out, fmt.Sprintf("%s:%d: %q: write %q (%s)", file, lineAt(p, k), f, tm.chinese, strings.Join(tm.english, " / ")))
			}
		}
	}
	seen := map[string]bool{}
	for _, tm := range terms {
		for _, x := range tm.alone {
			if seen[x] {
				continue
			}
			seen[x] = true
			// The fixed translations that contain x, from every entry.
			var within []string
			for _, other := range terms {
				if strings.Contains(other.chinese, x) {
					within = append(within, other.chinese)
				}
			}
		next:
			for _, k := range findAll(p, x) {
				for _, w := range within {
					for _, j := range findAll(p, w) {
						if j <= k && k+len(x) <= j+len(w) {
							continue next
						}
					}
				}
				out = append(out, fmt.Sprintf("%s:%d: %q on its own: write one of %q", file, lineAt(p, k), x, within))
			}
		}
	}
	return out
}

// TestGlossaryIsUsedConsistently: no Chinese note writes a spelling the glossary rules out, nor
// an English term the glossary translates, and every fixed translation is used somewhere.
func TestGlossaryIsUsedConsistently(t *testing.T) {
	terms := loadGlossary(t)
	notes, err := filepath.Glob(filepath.Join("zh", "*.md"))
	require.NoError(t, err)
	var all strings.Builder
	for _, file := range notes {
		if filepath.Base(file) == "glossary.md" {
			continue
		}
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		all.WriteString(prose(string(data)))
		for _, v := range glossaryViolations(terms, file, string(data)) {
			t.Error(v)
		}
	}
	for _, tm := range terms {
		assert.Contains(t, all.String(), tm.chinese, "the glossary fixes %q for %v, but no note uses it", tm.chinese, tm.english)
	}
}

// TestGlossaryCheckerCatches proves the check on sentences that break each kind of rule, and on
// the same sentences written as the glossary asks.
func TestGlossaryCheckerCatches(t *testing.T) {
	terms := loadGlossary(t)
	tests := []struct {
		name, text string
		wantBad    string // empty: no violation
	}{
		{"mirror pod written as bare 镜像", "kubelet 为每个静态 Pod 创建一个镜像。", `"镜像" on its own`},
		{"mirror pod written right", "kubelet 为每个静态 Pod 创建一个镜像 Pod，它的容器镜像不变。", ""},
		{"a forbidden variant", "kubelet 用功能门控打开它。", `"功能门控": write "特性门控"`},
		{"an English term the glossary translates", "它读取每个 flag 的值。", `"flag": write "标志"`},
		{"plural English", "所有 flags 都已弃用。", `"flags"`},
		{"English in code is code", "它读取 `flag` 包和 [标志](https://example.com/flag)。", ""},
		{"an English gloss after the translation", "同步循环（sync loop）每秒醒来一次。", ""},
		{"quoted English", `注释写道 "ugly, but necessary flag handling"。`, ""},
		{"a word inside a longer word is not the word", "它调用 toykubelet 的 pflag。", ""},
		{"mermaid labels are prose", "```mermaid\nflowchart LR\n  a[\"四个镜像\"] --> b\n```\n", `"镜像" on its own`},
		{"context on its own", "它把上下文传下去。", `"上下文" on its own`},
		{"context in its fixed compound", "它支持上下文日志。", ""},
		{"bare 代理 for an agent", "GPU 导出程序是一个监控代理。", `"代理" on its own`},
		{"bare 代理 for the node proxy", "请求经过代理到达 kubelet。", `"代理" on its own`},
		{"agent and node proxy in their fixed terms", "代理程序经节点代理调用 kubelet。", ""},
		{"the kubelet is no node proxy", "到第 14 步时它已经是节点上的代理程序了。", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := glossaryViolations(terms, "x.md", tt.text)
			if tt.wantBad == "" {
				assert.Empty(t, got)
				return
			}
			require.NotEmpty(t, got)
			assert.Contains(t, strings.Join(got, "\n"), tt.wantBad)
		})
	}
}
