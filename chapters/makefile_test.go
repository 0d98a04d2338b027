package chapters

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakefileGoTests: every `go test` of the Makefile says how long it may take (a cold build on
// 2 cores outlasts go test's default 10 minutes, and a hung test must still end), and those that
// run whole packages' tests shuffle them, so that no test depends on another having run first.
func TestMakefileGoTests(t *testing.T) {
	data, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	goTest := regexp.MustCompile(`(?m)^\t.*\$\(GO\) test .*$`)
	lines := goTest.FindAllString(string(data), -1)
	require.NotEmpty(t, lines, "the Makefile's go test commands")
	whole := 0
	for _, line := range lines {
		if strings.Contains(line, "echo ") {
			continue // what a target prints it will run, not a run
		}
		assert.Contains(t, line, " -timeout $(TIMEOUT) ", "%s", strings.TrimSpace(line))
		// A command that picks its tests (-run) runs a few named ones; one that does not, runs all.
		if !strings.Contains(line, " -run ") {
			whole++
			assert.Contains(t, line, " -shuffle=on ", "%s", strings.TrimSpace(line))
		}
	}
	assert.GreaterOrEqual(t, whole, 3, "test-unit, test-race and test-<chapter> run whole packages")
}
