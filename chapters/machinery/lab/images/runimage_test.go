package images

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

// TestRunImageIsTheDockerfiles: the run image made here is what .devcontainer/Dockerfile builds on
// a laptop — its base the Go image of go.mod's go line on Debian's Suite, its packages, its commands
// and its environment all in the run image's recipe and config.
func TestRunImageIsTheDockerfiles(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	data, err := os.ReadFile(filepath.Join(root, ".devcontainer", "Dockerfile"))
	require.NoError(t, err)
	// The Dockerfile's instructions, continuation lines joined, comments left out.
	var instructions []string
	for _, line := range strings.Split(strings.ReplaceAll(string(data), "\\\n", " "), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			instructions = append(instructions, line)
		}
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	f, err := modfile.ParseLax("go.mod", goMod, nil)
	require.NoError(t, err)
	goLine := regexp.MustCompile(`^\d+\.\d+`).FindString(f.Go.Version)
	require.NotEmpty(t, goLine)
	require.NotEmpty(t, instructions)
	assert.Equal(t, "FROM golang:"+goLine+"-"+Suite, instructions[0], "the Go image of go.mod's go line, on the run image's Debian")

	config := runImageConfig()
	recipe := RunImageRecipe()
	packages, commands := 0, 0
	for _, in := range instructions[1:] {
		verb, rest, _ := strings.Cut(in, " ")
		switch verb {
		case "ENV":
			assert.Contains(t, config.Config.Env, rest, "the Dockerfile's ENV")
		case "RUN":
			for _, command := range strings.Split(rest, "&&") {
				command = strings.Join(strings.Fields(command), " ")
				if install, found := strings.CutPrefix(command, "apt-get install -y --no-install-recommends "); found {
					for _, p := range strings.Fields(install) {
						assert.Contains(t, recipe.Packages, p, "a package the Dockerfile installs")
						packages++
					}
					continue
				}
				if command == "apt-get update" || command == "rm -rf /var/lib/apt/lists/*" {
					continue // apt's own: the recipe's debootstrap needs neither
				}
				assert.Contains(t, recipe.Changes, command, "a command the Dockerfile runs")
				commands++
			}
		default:
			t.Errorf("the Dockerfile's %s: the run image knows no such instruction", verb)
		}
	}
	assert.Positive(t, packages, "the packages the Dockerfile installs were read")
	assert.Positive(t, commands, "the commands the Dockerfile runs were read")
}
