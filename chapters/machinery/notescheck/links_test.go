package notescheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A relative link in Markdown, or a mermaid click target: [text](target) or click id "target".
var relativeLink = regexp.MustCompile(`\]\(([^)\s]+)\)|click \w+ "([^"]+)"`)

// TestRelativeLinks: every link from a note to a file of this repository (a chapter, another
// note, a translation) names a file or directory that exists, so that renaming a note or moving
// a package cannot leave a link behind.
func TestRelativeLinks(t *testing.T) {
	notes, err := filepath.Glob("*.md")
	require.NoError(t, err)
	zh, err := filepath.Glob("zh/*.md")
	require.NoError(t, err)
	for _, note := range append(notes, zh...) {
		data, err := os.ReadFile(note)
		require.NoError(t, err)
		for _, m := range relativeLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			_, err := os.Stat(filepath.Join(filepath.Dir(note), target))
			assert.NoError(t, err, "%s links %s", note, m[0])
		}
	}
}
