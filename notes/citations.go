// Package notes checks that the walkthrough's source citations are true: every citation of
// kubernetes source in the notes, the chapter READMEs and the chapters' Go files names a file
// that exists at the pinned version, lines that exist in it, and a symbol found in those lines.
//
// Two forms are recognised:
//
//   - in Markdown, a link pinned to a tag, whose text is one code span naming what the lines hold:
//     [`func RunKubelet`](https://github.com/kubernetes/kubernetes/blob/v1.37.2/cmd/kubelet/app/server.go#L1285-L1339)
//   - in Go files (comments or strings), the short form, with the symbol in parentheses:
//     cmd/kubelet/app/server.go#L1285-L1339 (func RunKubelet)
//
// Files under staging/src/k8s.io/NAME are read from the module k8s.io/NAME at v0.MINOR.PATCH.
package notes

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

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
	// The short form used in Go files.
	shortForm = regexp.MustCompile(`(?:^|[\s(])((?:cmd|pkg|staging|plugin|test)/[\w./-]+\.go)#L(\d+)(?:-L(\d+))?`)
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
		text = regexp.MustCompile(`\n(\s*)//\s?`).ReplaceAllStringFunc(text, func(m string) string {
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
			if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(ref) {
				errs = append(errs, fmt.Errorf("%s:%d: links kubernetes at %q, which moves; pin a release tag", path, lineOf(m[0]), ref))
			}
		}
		return cites, errs
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

// parenthesized returns the text of " (…)" at the start of s, nested parentheses included.
func parenthesized(s string) string {
	s = strings.ReplaceAll(s, "\x00", " ")
	if !strings.HasPrefix(s, " (") {
		return ""
	}
	depth := 0
	for i, r := range s[1:] {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return strings.Join(strings.Fields(s[2:i+1]), " ")
			}
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
	var info struct{ Dir, Error string }
	_ = json.Unmarshal(out, &info)
	if info.Error != "" {
		return "", fmt.Errorf("%s: %s", key, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", key, err)
	}
	s.dirs[key] = info.Dir
	return info.Dir, nil
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

// Check verifies one citation and returns nil or what is wrong with it. When the symbol is not
// in the cited lines but elsewhere in the file, the error says where it is now.
func (s *Source) Check(c Citation) error {
	if c.Ref != "" && c.Ref != s.Pinned {
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
	lines, err := readLines(file)
	if err != nil {
		return err
	}
	if c.From < 1 || c.To < c.From || c.To > len(lines) {
		return fmt.Errorf("%s: %s: lines out of range, the file has %d lines in %s", c.Where, c, len(lines), s.Version)
	}
	if c.Symbol == "" {
		return nil
	}
	if contains(lines[c.From-1:c.To], c.Symbol) {
		return nil
	}
	if at := find(lines, c.Symbol); at > 0 {
		return fmt.Errorf("%s: %s: %q is not in those lines in %s; it is at line %d now", c.Where, c, c.Symbol, s.Version, at)
	}
	return fmt.Errorf("%s: %s: %q is not in those lines, nor anywhere in the file, in %s", c.Where, c, c.Symbol, s.Version)
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

// find returns the first line (1-based) from which the symbol can be read, or 0.
func find(lines []string, symbol string) int {
	want := squash(symbol)
	for i := range lines {
		end := min(len(lines), i+40)
		if strings.HasPrefix(squash(strings.Join(lines[i:end], "\n")), want) ||
			strings.Contains(squash(lines[i]), want) {
			return i + 1
		}
	}
	return 0
}

// Files lists the files whose citations are checked, under root: the notes, the chapter
// READMEs, and the chapters' Go files.
func Files(root string) ([]string, error) {
	var files []string
	for _, dir := range []string{"notes", "chapters"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() && (name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			if !d.IsDir() && (strings.HasSuffix(name, ".md") || (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"))) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		files = append(files, filepath.Join(root, "README.md"))
	}
	sort.Strings(files)
	return files, nil
}

// CheckTree checks every citation under root against src and returns how many it checked and
// what is wrong, one error per broken citation.
func CheckTree(root string, src *Source) (int, []error) {
	files, err := Files(root)
	if err != nil {
		return 0, []error{err}
	}
	checked := 0
	var problems []error
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		rel, _ := filepath.Rel(root, file)
		cites, errs := Extract(rel, data)
		problems = append(problems, errs...)
		for _, c := range cites {
			checked++
			if err := src.Check(c); err != nil {
				problems = append(problems, err)
			}
		}
	}
	return checked, problems
}
