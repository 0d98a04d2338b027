package repocheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layoutEntry is one line of the README's layout block: a path, and the packages it names in
// parentheses, if any.
type layoutEntry struct {
	path     string
	packages []string
}

var (
	layoutLine   = regexp.MustCompile(`^(\S+/)\s+(.*)$`)
	parenthesis  = regexp.MustCompile(`\(([a-z, \n]+)\)`)
	exceptionsRe = regexp.MustCompile(`(?i)\b(no|one|two|three) exceptions?\b`)
)

// readLayout reads the README's "## Layout" block: each entry's path, and the package names of
// its description's parentheses (the description may go on over the lines below it).
func readLayout(t *testing.T) ([]layoutEntry, string) {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(data), "\n## Layout\n")
	require.True(t, found, "README.md has a section ## Layout")
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, found := strings.Cut(section, "```\n")
	require.True(t, found)
	block, prose, found := strings.Cut(block, "```\n")
	require.True(t, found)
	var entries []layoutEntry
	var text []string
	flush := func() {
		if len(entries) == 0 {
			return
		}
		e := &entries[len(entries)-1]
		for _, m := range parenthesis.FindAllStringSubmatch(strings.Join(text, " "), -1) {
			if !strings.Contains(m[1], ",") {
				continue // "(three lines)": words, not a list of packages
			}
			for _, p := range strings.Split(m[1], ",") {
				e.packages = append(e.packages, strings.TrimSpace(p))
			}
		}
		text = nil
	}
	for _, line := range strings.Split(block, "\n") {
		if m := layoutLine.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, " ") {
			flush()
			entries = append(entries, layoutEntry{path: m[1]})
			text = []string{m[2]}
		} else {
			text = append(text, strings.TrimSpace(line))
		}
	}
	flush()
	return entries, prose
}

// subdirs lists the directories under dir that hold Go packages, by name.
func subdirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "testdata" {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestLayout holds the README's layout section to the tree: chapters/ holds the lessons and one
// other entry, machinery/, with its README; every directory of machinery/ has its line, every
// line's directory exists, the packages each line names are those there; notes/ is prose only;
// and the import exceptions the prose counts are those the import rules allow.
func TestLayout(t *testing.T) {
	entries, prose := readLayout(t)
	require.NotEmpty(t, entries)
	listed := map[string]layoutEntry{}
	for _, e := range entries {
		listed[e.path] = e
	}

	var others []string
	for _, dir := range subdirs(t, ".") {
		if !regexp.MustCompile(`^\d\d-`).MatchString(dir) {
			others = append(others, dir)
		}
	}
	assert.Equal(t, []string{"machinery"}, others, "chapters/ holds the lessons (NN-name) and one other entry")
	_, ok := listed["chapters/NN-name/"]
	assert.True(t, ok, "the layout has a line for the chapters (chapters/NN-name/)")
	assert.FileExists(t, filepath.Join("machinery", "README.md"), "chapters/machinery/ is signposted by a README")
	for _, dir := range subdirs(t, "machinery") {
		_, ok := listed["chapters/machinery/"+dir+"/"]
		assert.True(t, ok, "chapters/machinery/%s/ has no line in README.md's layout section", dir)
	}
	for _, e := range entries {
		if e.path == "chapters/NN-name/" {
			continue
		}
		assert.DirExists(t, filepath.Join("..", e.path), "README.md's layout names %s", e.path)
	}
	goInNotes, err := filepath.Glob(filepath.Join("..", "notes", "*.go"))
	require.NoError(t, err)
	assert.Empty(t, goInNotes, "notes/ is prose only; the notes' checks live in chapters/machinery/notescheck")

	// The packages each line names are the ones there: support's and testsupport's, and the
	// packages the chapters introduce.
	for _, dir := range []string{"support", "testsupport"} {
		e := listed["chapters/machinery/"+dir+"/"]
		assert.ElementsMatch(t, subdirs(t, filepath.Join("machinery", dir)), e.packages, "the packages README.md's layout names for chapters/machinery/%s/", dir)
	}
	var introduced []string
	chapters, err := filepath.Glob("[0-9][0-9]-*")
	require.NoError(t, err)
	for i, c := range chapters {
		assert.Equal(t, fmt.Sprintf("%02d-", i+1), c[:3], "the chapters are numbered 01, 02, … without a gap: %s", c)
		introduced = append(introduced, subdirs(t, c)...)
	}
	assert.ElementsMatch(t, introduced, listed["chapters/NN-name/"].packages, "the packages README.md says the chapters introduce")

	// "one exception": as many as the import rules allow.
	m := exceptionsRe.FindStringSubmatch(prose)
	require.NotNil(t, m, "README.md's layout section says how many import exceptions there are")
	count := slices.Index([]string{"no", "one", "two", "three"}, strings.ToLower(m[1]))
	assert.Equal(t, len(forwardImports), count, "README.md says %q; the import rules allow %d", m[0], len(forwardImports))
}

var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestMarkdownLinks: every relative link of the repository's Markdown files (but the notes',
// which the notes' own tests check) points at a file or directory that exists.
func TestMarkdownLinks(t *testing.T) {
	var files []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".bin" || d.Name() == "notes" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	links := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			links++
			_, err := os.Stat(filepath.Join(filepath.Dir(f), target))
			assert.NoError(t, err, "%s links %s", f, m[1])
		}
	}
	assert.Greater(t, links, 50)
}
