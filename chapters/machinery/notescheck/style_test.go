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

var fencedBlock = regexp.MustCompile("(?ms)^```(\\w*)\\n(.*?)^```")

// maxPastedLines is "a few lines": notes point at code, they do not paste it.
const maxPastedLines = 12

// TestNoteShape: each note says first what the reader will understand, ends with what to read
// next, and pastes no more than a few lines of code (diagrams aside).
func TestNoteShape(t *testing.T) {
	files, err := filepath.Glob("*.md")
	require.NoError(t, err)
	zh, err := filepath.Glob("zh/*.md")
	require.NoError(t, err)
	for _, file := range append(files, zh...) {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			text := string(data)
			chinese := strings.HasPrefix(file, "zh/")
			next, opening := "## Next", "After this note you will understand"
			if chinese {
				next, opening = "## 下一步", "读完本文"
			}
			assert.Contains(t, text, "\n"+next+"\n", "ends with what to read next")
			if filepath.Base(file) != "README.md" { // the map opens with the map
				head := strings.Join(strings.SplitN(text, "\n", 8)[:min(7, strings.Count(text, "\n"))], "\n")
				assert.Contains(t, head, opening, "opens with what the reader will understand")
			}
			for _, m := range fencedBlock.FindAllStringSubmatch(text, -1) {
				if m[1] == "mermaid" {
					continue
				}
				lines := strings.Count(m[2], "\n")
				assert.LessOrEqual(t, lines, maxPastedLines, "a pasted block of %d lines: point at the code instead", lines)
			}
		})
	}
}
