package notescheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testFuncName = regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Z]\\w*)`")

// TestMeasurementsNameRealTests: every test, benchmark and fuzz target the measurements note
// names (in either language), and the machinery README's inventory of what each chapter's tests
// prove, is a function in the test files of a chapter or of a program under examples/ (the
// production client's), so neither can keep a test that was renamed or removed.
func TestMeasurementsNameRealTests(t *testing.T) {
	declared := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`)
	for _, dir := range []string{"chapters", "examples"} {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllStringSubmatch(string(data), -1) {
				declared[m[1]] = true
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, declared)
	for _, file := range []string{"measurements.md", "zh/measurements.md", "../chapters/machinery/README.md"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		names := testFuncName.FindAllStringSubmatch(string(data), -1)
		require.NotEmpty(t, names, "%s names the tests it lists", file)
		for _, m := range names {
			assert.True(t, declared[m[1]], "%s names %s, which no test file of chapters/ or examples/ declares", file, m[1])
		}
	}
}
