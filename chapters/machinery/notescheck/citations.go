// Package notescheck checks that the walkthrough's source citations are true and tight: every
// citation of kubernetes source names a file that exists at the pinned version, and lines that
// are exactly what the citation says they are.
//
// Two forms are recognised:
//
//   - in Markdown, a link pinned to a tag, whose text is one code span naming what the lines hold:
//     [`func RunKubelet`](https://github.com/kubernetes/kubernetes/blob/v1.37.2/cmd/kubelet/app/server.go#L1285-L1339)
//   - in Go files (comments or strings) and in Markdown outside links, the short form, with what
//     the lines hold in parentheses: cmd/kubelet/app/server.go#L1285-L1339 (func RunKubelet)
//
// A line citation must name what its lines hold, and two rules say what "exactly" means:
//
//  1. A declaration: when the name opens with func, type, var or const and a name the file
//     declares at package level (`func RunKubelet`, `func (kl *Kubelet) Run(…`, `type Bootstrap
//     interface {`), the range is that declaration's own first and last lines, ±0: from the line
//     of the keyword (in a parenthesised group, of the name) to the line of its closing brace or
//     last token. The doc comment is not part of it, so that the first cited line is the line the
//     quoted text is on, as in rule 2.
//  2. Anything else (a statement, an expression, a comment, a field, a line of YAML or shell):
//     the quoted text begins on the first line of the range, or the range opens with the comment
//     right above the line where the text begins. The range ends where the quoted text ends, or
//     where a piece of syntax that begins on the text's first line ends (the statement, spec,
//     field, case or comment the text opens), or where a later statement of the same block ends
//     (a run of statements, as chapter 03 cites the steps of run). Outside Go, a comment line may
//     take the comment lines after it, and a line ending in "{" or "(" the lines up to its close.
//
// Declarations are found with go/parser and go/ast, not by pattern. Quoted text is compared
// with all white space dropped, so that it may wrap or be re-indented.
//
// Files under staging/src/k8s.io/NAME are read from the module k8s.io/NAME at v0.MINOR.PATCH.
//
// Links name the pinned tag, except in the notes that compare the pinned release with another
// one (Comparisons), whose links may name that release's tag too and are checked against it.
package notescheck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/module"
)

// Comparisons are the notes that compare the pinned release with another one, each with the other
// release's tag: their links may name that tag besides the pinned one, and a link that does is
// checked against the source at the tag it names. No other file may cite another tag.
var Comparisons = map[string]string{
	"notes/v1.38.md":    "v1.38.0-beta.0",
	"notes/zh/v1.38.md": "v1.38.0-beta.0",
}

// Citation is one reference to kubernetes source.
type Citation struct {
	// Where is the citing file and line ("notes/04-runkubelet.md:12").
	Where string
	// Ref is the tag a Markdown link names; empty for the short form (the pinned version).
	Ref string
	// Path is the file in the kubernetes repository ("cmd/kubelet/app/server.go").
	Path string
	// From and To are the line range; zero when the citation names a whole file.
	From, To int
	// Symbol is the text the lines must contain; empty when none is given.
	Symbol string
}

// file is the citing file, as Where names it.
func (c Citation) file() string {
	if i := strings.LastIndex(c.Where, ":"); i >= 0 {
		return c.Where[:i]
	}
	return c.Where
}

func (c Citation) String() string {
	s := c.Path
	if c.From > 0 {
		s += fmt.Sprintf("#L%d", c.From)
		if c.To != c.From {
			s += fmt.Sprintf("-L%d", c.To)
		}
	}
	if c.Symbol != "" {
		s += " (" + c.Symbol + ")"
	}
	return s
}

var (
	// A Markdown link to kubernetes/kubernetes source: [text](https://github.com/kubernetes/kubernetes/blob/REF/PATH#La-Lb).
	markdownLink = regexp.MustCompile(`\[((?:[^\[\]]|\[[^\]]*\])*)\]\((https://github\.com/kubernetes/kubernetes/(blob|tree)/([^/)]+)/([^)#\s]+)(?:#L(\d+)(?:-L(\d+))?)?)\)`)
	// Any link into the kubernetes repository, pinned or not.
	anyKubernetesLink = regexp.MustCompile(`https://github\.com/kubernetes/kubernetes/(?:blob|tree)/([^/)\s]+)/`)
	// A release tag, which never moves: v1.37.2, or a pre-release such as v1.38.0-beta.0.
	releaseTag = regexp.MustCompile(`^v\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?$`)
	// The short form used in Go files.
	shortForm = regexp.MustCompile(`(?:^|[\s("\x60])((?:cmd|pkg|staging|plugin|test)/[\w./-]+\.go)#L(\d+)(?:-L(\d+))?`)
	codeSpan  = regexp.MustCompile("^`([^`]+)`$")
)

// Extract finds the citations in one file. Problems of form (a link that is not pinned, a
// Markdown citation whose text is not a code span) come back as errors.
func Extract(path string, data []byte) ([]Citation, []error) {
	var cites []Citation
	var errs []error
	text := string(data)
	isGo := strings.HasSuffix(path, ".go")
	if isGo {
		// A citation may run over two comment lines: join them, keeping line numbers.
		text = regexp.MustCompile(`\n([ \t]*)//[ \t]?`).ReplaceAllStringFunc(text, func(m string) string {
			return " \x00" + strings.Repeat(" ", len(m)-2)
		})
	}
	lineOf := func(offset int) int {
		return 1 + strings.Count(text[:offset], "\n") + strings.Count(text[:offset], "\x00")
	}

	if !isGo {
		for _, m := range markdownLink.FindAllStringSubmatchIndex(text, -1) {
			sub := func(i int) string {
				if m[2*i] < 0 {
					return ""
				}
				return text[m[2*i]:m[2*i+1]]
			}
			where := fmt.Sprintf("%s:%d", path, lineOf(m[0]))
			c := Citation{Where: where, Ref: sub(4), Path: sub(5)}
			if sub(6) != "" {
				c.From, _ = strconv.Atoi(sub(6))
				c.To = c.From
				if sub(7) != "" {
					c.To, _ = strconv.Atoi(sub(7))
				}
				span := codeSpan.FindStringSubmatch(strings.TrimSpace(sub(1)))
				if span == nil {
					errs = append(errs, fmt.Errorf("%s: the text of a line citation must be one code span naming what the lines hold, got [%s]", where, sub(1)))
					continue
				}
				c.Symbol = span[1]
			}
			cites = append(cites, c)
		}
		for _, m := range anyKubernetesLink.FindAllStringSubmatchIndex(text, -1) {
			ref := text[m[2]:m[3]]
			if !releaseTag.MatchString(ref) {
				errs = append(errs, fmt.Errorf("%s:%d: links kubernetes at %q, which moves; pin a release tag", path, lineOf(m[0]), ref))
			}
		}
	}

	for _, m := range shortForm.FindAllStringSubmatchIndex(text, -1) {
		c := Citation{Where: fmt.Sprintf("%s:%d", path, lineOf(m[2])), Path: text[m[2]:m[3]]}
		c.From, _ = strconv.Atoi(text[m[4]:m[5]])
		c.To = c.From
		if m[6] >= 0 {
			c.To, _ = strconv.Atoi(text[m[6]:m[7]])
		}
		c.Symbol = parenthesized(text[m[1]:])
		cites = append(cites, c)
	}
	return cites, errs
}

// parenthesized returns the text of the "(…)" that follows s's leading white space, nested
// parentheses included, or "" when s does not continue with one.
func parenthesized(s string) string {
	s = strings.ReplaceAll(s, "\x00", " ")
	rest := strings.TrimLeft(s, " \t")
	if len(rest) == len(s) || !strings.HasPrefix(rest, "(") {
		return ""
	}
	depth := 0
	for i, r := range rest {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return strings.Join(strings.Fields(rest[1:i]), " ")
			}
		case '\n': // the citation's line ended with its parentheses open
			return ""
		}
	}
	return ""
}

// Source reads files of kubernetes at one version from the Go module cache, downloading
// modules through the go command when needed.
type Source struct {
	// Pinned is the version every link must name, the one go.mod requires.
	Pinned string
	// Version is the kubernetes version whose files are read: Pinned, or another one for an
	// upgrade report (what would break if the pin moved there).
	Version string
	dirs    map[string]string
	files   map[string]*source
	// compared reads the tags of Comparisons, one Source each.
	compared map[string]*Source
}

// NewSource returns a Source that reads version and expects links pinned to pinned.
func NewSource(pinned, version string) *Source {
	return &Source{Pinned: pinned, Version: version, dirs: map[string]string{}}
}

// moduleDir returns the directory of module@version, through `go mod download`.
func (s *Source) moduleDir(module, version string) (string, error) {
	key := module + "@" + version
	if dir, ok := s.dirs[key]; ok {
		return dir, nil
	}
	out, err := exec.Command("go", "mod", "download", "-json", key).Output()
	var info struct{ Dir, Error, Zip string }
	_ = json.Unmarshal(out, &info)
	if info.Error != "" && info.Zip != "" && info.Dir == "" {
		// A module whose go line asks for a newer Go than this one (v1.38 asks for Go 1.27) is
		// downloaded and extracted before the go command refuses it: its files can be read.
		if dir, derr := extracted(module, version); derr == nil {
			info.Dir, info.Error, err = dir, "", nil
		}
	}
	if info.Error != "" {
		return "", fmt.Errorf("%s: %s", key, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", key, err)
	}
	s.dirs[key] = info.Dir
	return info.Dir, nil
}

// extracted is the directory of module@version in the module cache, when it is there.
func extracted(mod, version string) (string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	escaped, err := module.EscapePath(mod)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), escaped+"@"+version)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", err
	}
	return dir, nil
}

// at is the Source of a comparison's tag.
func (s *Source) at(tag string) *Source {
	if s.compared == nil {
		s.compared = map[string]*Source{}
	}
	if _, ok := s.compared[tag]; !ok {
		s.compared[tag] = NewSource(tag, tag)
	}
	return s.compared[tag]
}

// File resolves a repository path to a file on disk.
func (s *Source) File(path string) (string, error) {
	if rest, ok := strings.CutPrefix(path, "staging/src/k8s.io/"); ok {
		name, inModule, _ := strings.Cut(rest, "/")
		dir, err := s.moduleDir("k8s.io/"+name, "v0"+strings.TrimPrefix(s.Version, "v1"))
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, inModule), nil
	}
	dir, err := s.moduleDir("k8s.io/kubernetes", s.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, path), nil
}

// Check verifies one citation and returns nil or what is wrong with it: the file and lines must
// exist, and the lines must be exactly what the citation names (the rules are in the package
// comment). When the named code is elsewhere, the error says where it is now.
func (s *Source) Check(c Citation) error {
	if c.Ref != "" && c.Ref != s.Pinned {
		if tag, ok := Comparisons[c.file()]; ok && c.Ref == tag {
			return s.at(tag).Check(c)
		}
		return fmt.Errorf("%s: %s cites %s, not the pinned %s", c.Where, c, c.Ref, s.Pinned)
	}
	file, err := s.File(c.Path)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.Where, c, err)
	}
	info, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("%s: %s: no such file in kubernetes %s", c.Where, c, s.Version)
	}
	if c.From == 0 || info.IsDir() {
		return nil
	}
	src, err := s.load(file)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.Where, c, err)
	}
	if c.From < 1 || c.To < c.From || c.To > len(src.lines) {
		return fmt.Errorf("%s: %s: lines out of range, the file has %d lines in %s", c.Where, c, len(src.lines), s.Version)
	}
	if c.Symbol == "" {
		return fmt.Errorf("%s: %s: a line citation must name what the lines hold, in parentheses after the range", c.Where, c)
	}
	if d, ok := parseDecl(c.Symbol); ok && src.file != nil && len(src.decls(d)) > 0 {
		return s.checkDecl(c, src, d)
	}
	return s.checkText(c, src)
}

// checkDecl is rule 1: the range of a declaration is the declaration's own lines, exactly.
func (s *Source) checkDecl(c Citation, src *source, d decl) error {
	spans := src.decls(d)
	for _, sp := range spans {
		if sp.from == c.From && sp.to == c.To {
			if !contains(src.lines[c.From-1:c.To], c.Symbol) {
				return fmt.Errorf("%s: %s: %q is not the text of that declaration in %s", c.Where, c, c.Symbol, s.Version)
			}
			return nil
		}
	}
	var want []string
	for _, sp := range spans {
		want = append(want, sp.String())
	}
	return fmt.Errorf("%s: %s: %s is %s in %s: cite the declaration's own lines, exactly", c.Where, c, d, strings.Join(want, " or "), s.Version)
}

// checkText is rule 2: the quoted text begins on the first line of the range, and the range
// ends where the text, the code the text opens, or a run of statements from there ends.
func (s *Source) checkText(c Citation, src *source) error {
	occ := src.occurrences(c.Symbol)
	if len(occ) == 0 {
		return fmt.Errorf("%s: %s: %q is not in those lines, nor anywhere in the file, in %s", c.Where, c, c.Symbol, s.Version)
	}
	var ends []int
	for _, o := range occ {
		if o.from != c.From && src.commentAbove[o.from] != c.From {
			continue
		}
		allowed := src.ends(o.from, o.to)
		if slices.Contains(allowed, c.To) {
			return nil
		}
		ends = append(ends, allowed...)
	}
	if len(ends) > 0 {
		slices.Sort(ends)
		ends = slices.Compact(ends)
		var want []string
		for _, e := range ends {
			want = append(want, span{c.From, e}.String())
		}
		return fmt.Errorf("%s: %s: the range must end where the quoted text, the code it opens, or a run of statements from there ends: %s in %s", c.Where, c, strings.Join(want, ", "), s.Version)
	}
	for _, o := range occ {
		if o.from > c.From && o.from <= c.To {
			return fmt.Errorf("%s: %s: %q begins on line %d, not on the first line of the range, in %s", c.Where, c, c.Symbol, o.from, s.Version)
		}
	}
	return fmt.Errorf("%s: %s: %q is not in those lines in %s; it is at line %d now", c.Where, c, c.Symbol, s.Version, occ[0].from)
}

// span is a range of lines, 1-based and inclusive.
type span struct{ from, to int }

func (sp span) String() string {
	if sp.from == sp.to {
		return fmt.Sprintf("#L%d", sp.from)
	}
	return fmt.Sprintf("#L%d-L%d", sp.from, sp.to)
}

// decl is what a citation of a declaration names: `func (r *T) Name`, `type Name`, `var Name`.
type decl struct {
	kind, recv, name string
}

func (d decl) String() string {
	if d.recv != "" {
		return fmt.Sprintf("func (%s) %s", d.recv, d.name)
	}
	return d.kind + " " + d.name
}

var declText = regexp.MustCompile(`^(func|type|var|const)\s+(?:\(\s*(?:\w+\s+)?\*?\s*(\w+)(?:\[[^\]]*\])?\s*\)\s*)?(\w+)`)

// parseDecl reads the declaration a quoted text names, if it names one.
func parseDecl(text string) (decl, bool) {
	m := declText.FindStringSubmatch(text)
	if m == nil || (m[1] != "func" && m[2] != "") {
		return decl{}, false
	}
	return decl{kind: m[1], recv: m[2], name: m[3]}, true
}

// source is one cited file, read once: its lines, the white-space-free text the quoted texts
// are looked up in, and, for Go, its syntax tree.
type source struct {
	lines  []string
	flat   string // the lines with all white space dropped
	lineAt []int  // lineAt[i] is the line of flat[i]
	fset   *token.FileSet
	file   *ast.File // nil unless the file is Go and parses
	// endsFrom lists, for a line, where a range that begins on it may end (Go files only).
	endsFrom map[int][]int
	// commentAbove maps a line to the first line of the comment that ends right above it.
	commentAbove map[int]int
}

func (s *Source) load(path string) (*source, error) {
	if src, ok := s.files[path]; ok {
		return src, nil
	}
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	src := &source{lines: lines}
	var b strings.Builder
	for i, l := range lines {
		f := squash(l)
		b.WriteString(f)
		for range len(f) {
			src.lineAt = append(src.lineAt, i+1)
		}
	}
	src.flat = b.String()
	if strings.HasSuffix(path, ".go") {
		src.fset = token.NewFileSet()
		if f, err := parser.ParseFile(src.fset, path, nil, parser.ParseComments|parser.SkipObjectResolution); err == nil {
			src.file = f
			src.index()
		}
	} else {
		src.indexText()
	}
	if s.files == nil {
		s.files = map[string]*source{}
	}
	s.files[path] = src
	return src, nil
}

// occurrences returns the lines each occurrence of text begins and ends on, in file order.
func (src *source) occurrences(text string) []span {
	want := squash(text)
	if want == "" {
		return nil
	}
	var out []span
	for i := 0; ; {
		j := strings.Index(src.flat[i:], want)
		if j < 0 {
			return out
		}
		at := i + j
		out = append(out, span{src.lineAt[at], src.lineAt[at+len(want)-1]})
		i = at + 1
	}
}

func (src *source) lineOf(p token.Pos) int { return src.fset.Position(p).Line }

func (src *source) spanOf(n ast.Node) span { return span{src.lineOf(n.Pos()), src.lineOf(n.End() - 1)} }

// decls returns the lines of each package-level declaration d names: from the keyword (or, in
// a group, the name) to the last token, doc comments excluded. A declaration inside a function
// is a statement, cited by rule 2.
func (src *source) decls(d decl) []span {
	var out []span
	for _, n := range src.file.Decls {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if d.kind == "func" && n.Name.Name == d.name && receiverType(n) == d.recv {
				out = append(out, span{src.lineOf(n.Type.Func), src.lineOf(n.End() - 1)})
			}
		case *ast.GenDecl:
			if n.Tok.String() != d.kind {
				continue
			}
			for _, spec := range n.Specs {
				var names []*ast.Ident
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					names = []*ast.Ident{spec.Name}
				case *ast.ValueSpec:
					names = spec.Names
				}
				for _, name := range names {
					if name.Name != d.name {
						continue
					}
					if n.Lparen.IsValid() {
						out = append(out, src.spanOf(spec))
					} else {
						out = append(out, span{src.lineOf(n.TokPos), src.lineOf(n.End() - 1)})
					}
				}
			}
		}
	}
	return out
}

// receiverType is the type name of a method's receiver, "" for a function.
func receiverType(f *ast.FuncDecl) string {
	if f.Recv == nil || len(f.Recv.List) == 0 {
		return ""
	}
	t := f.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// ends returns the lines a range may end on when its quoted text runs from line from to line
// textEnd: the text's own last line, and, in Go, those src.index found for line from.
func (src *source) ends(from, textEnd int) []int {
	out := []int{textEnd}
	for _, end := range src.endsFrom[from] {
		if end >= textEnd {
			out = append(out, end)
		}
	}
	return out
}

// index fills endsFrom: for each line, the last line of every syntax node that begins on it
// (the statement, spec, field, case or comment a quoted text opens), and, where the line opens
// an element of a list (statements of a block, specs of a group, fields, elements of a
// literal) or the comment right above one, the last line of that element and of each later
// one: a run of statements.
func (src *source) index() {
	src.endsFrom = map[int][]int{}
	add := func(from int, n ast.Node) {
		src.endsFrom[from] = append(src.endsFrom[from], src.spanOf(n).to)
	}
	var lists [][]ast.Node
	ast.Inspect(src.file, func(n ast.Node) bool {
		if n == nil {
			return false
		}
		add(src.lineOf(n.Pos()), n)
		switch n := n.(type) {
		case *ast.BlockStmt:
			lists = append(lists, nodes(n.List))
		case *ast.CaseClause:
			lists = append(lists, nodes(n.Body))
		case *ast.CommClause:
			lists = append(lists, nodes(n.Body))
		case *ast.GenDecl:
			lists = append(lists, nodes(n.Specs))
		case *ast.FieldList:
			lists = append(lists, nodes(n.List))
		case *ast.CompositeLit:
			lists = append(lists, nodes(n.Elts))
		}
		return true
	})
	src.commentAbove = map[int]int{}
	commentEndingOn := map[int]span{}
	for _, cg := range src.file.Comments {
		add(src.lineOf(cg.Pos()), cg)
		for _, c := range cg.List {
			add(src.lineOf(c.Pos()), c)
		}
		sp := src.spanOf(cg)
		if !strings.HasPrefix(strings.TrimSpace(src.lines[sp.from-1]), "/") {
			continue // a comment after code on its line is not a comment above anything
		}
		commentEndingOn[sp.to] = sp
		src.commentAbove[sp.to+1] = sp.from
	}
	for _, list := range lists {
		for i, n := range list {
			opens := []int{src.lineOf(n.Pos())}
			prevEnd := 0
			if i > 0 {
				prevEnd = src.spanOf(list[i-1]).to
			}
			if c, ok := commentEndingOn[opens[0]-1]; ok && c.from > prevEnd {
				opens = append(opens, c.from)
			}
			for _, from := range opens {
				for _, later := range list[i:] {
					add(from, later)
				}
			}
		}
	}
}

// indexText fills endsFrom for a file that is not Go (shell, YAML, configuration), by lines:
// a comment line may be cited with the comment lines that follow it, and a line that opens a
// block with "{" or "(" with the lines up to the one that closes it.
func (src *source) indexText() {
	src.endsFrom = map[int][]int{}
	isComment := func(l string) bool {
		l = strings.TrimSpace(l)
		return strings.HasPrefix(l, "#") || strings.HasPrefix(l, "//")
	}
	for i, l := range src.lines {
		from := i + 1
		if isComment(l) {
			end := from
			for end < len(src.lines) && isComment(src.lines[end]) {
				end++
			}
			src.endsFrom[from] = append(src.endsFrom[from], end)
			continue
		}
		t := strings.TrimSpace(l)
		if !strings.HasSuffix(t, "{") && !strings.HasSuffix(t, "(") {
			continue
		}
		depth := 0
		for j := i; j < len(src.lines); j++ {
			depth += strings.Count(src.lines[j], "{") + strings.Count(src.lines[j], "(") -
				strings.Count(src.lines[j], "}") - strings.Count(src.lines[j], ")")
			if depth <= 0 {
				src.endsFrom[from] = append(src.endsFrom[from], j+1)
				break
			}
		}
	}
}

func nodes[T ast.Node](list []T) []ast.Node {
	out := make([]ast.Node, len(list))
	for i, n := range list {
		out[i] = n
	}
	return out
}

func readLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// squash drops all white space, so that citations may wrap or re-indent code.
func squash(s string) string { return strings.Join(strings.Fields(s), "") }

func contains(lines []string, symbol string) bool {
	return strings.Contains(squash(strings.Join(lines, "\n")), squash(symbol))
}

// Files lists the files whose citations are checked, under root: the root README, every
// Markdown file under notes, chapters, examples and .ci, and every Go file under chapters and
// examples (tests included) but the tests of this package, whose broken citations are broken on
// purpose, and of nextrelease, whose citations name a made-up kubernetes.
func Files(root string) ([]string, error) {
	var files []string
	for _, dir := range []string{"notes", "chapters", "examples", ".ci"} {
		top := filepath.Join(root, dir)
		err := filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() && path != top && (name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			ownTest := strings.HasSuffix(name, "_test.go") && slices.Contains([]string{"notescheck", "nextrelease"}, filepath.Base(filepath.Dir(path)))
			if !d.IsDir() && (strings.HasSuffix(name, ".md") || (strings.HasSuffix(name, ".go") && !ownTest)) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil && !(dir != "notes" && dir != "chapters" && errors.Is(err, fs.ErrNotExist)) {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		files = append(files, filepath.Join(root, "README.md"))
	}
	sort.Strings(files)
	return files, nil
}

// Citations lists every citation under root (Files), each Where relative to root, and the
// problems of form Extract finds.
func Citations(root string) ([]Citation, []error) {
	files, err := Files(root)
	if err != nil {
		return nil, []error{err}
	}
	var cites []Citation
	var problems []error
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		rel, _ := filepath.Rel(root, file)
		found, errs := Extract(rel, data)
		cites = append(cites, found...)
		problems = append(problems, errs...)
	}
	return cites, problems
}

// CheckTree checks every citation under root against src and returns how many it checked and
// what is wrong, one error per broken citation.
func CheckTree(root string, src *Source) (int, []error) {
	cites, problems := Citations(root)
	for _, c := range cites {
		if err := src.Check(c); err != nil {
			problems = append(problems, err)
		}
	}
	return len(cites), problems
}
