package images

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
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

// The run image is the root file system and this machine's Go at /usr/local/go, owned by root,
// with the Go image's environment; made again only when an input changes.
func TestBuildRunImage(t *testing.T) {
	_, err := exec.LookPath("tar")
	tier.Require(t, "node", err) // the layers are written by tar
	rootfs, _ := fakeRootfs(t)
	require.NoError(t, os.WriteFile(filepath.Join(rootfs, rootfsDone), []byte(RunImageRecipe().text()), 0o644))
	goroot := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(goroot, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(goroot, "VERSION"), []byte("go1.26.8\ntime 2026-11-05\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(goroot, "bin", "go"), []byte("go\n"), 0o755))
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(filepath.Join(goroot, "bin", "go"), 1000, 1000)) // a Go unpacked by a user
	}
	opts := RunImageOptions{Rootfs: rootfs, GoRoot: goroot, Out: filepath.Join(t.TempDir(), "run-image.tar"), Ref: "kubelet-walkthrough/run:test"}

	image, err := BuildRunImage(context.Background(), opts)
	require.NoError(t, err)
	assert.True(t, image.Built)
	config, layers := loadImage(t, opts.Out, opts.Ref)
	assert.Equal(t, runImageEnv, config.Config.Env)
	require.Len(t, config.History, 2)
	assert.Equal(t, "kubelet-walkthrough lab: Go go1.26.8", config.History[1].CreatedBy)
	require.Len(t, layers, 2)
	rootEntries, _ := layerEntries(t, layers[0])
	assert.Contains(t, rootEntries, "/etc/os-release")
	assert.NotContains(t, rootEntries, "/"+rootfsDone, "the marker left out")
	goEntries, order := layerEntries(t, layers[1])
	assert.Equal(t, []string{"/usr/local/go/", "/usr/local/go/VERSION", "/usr/local/go/bin/", "/usr/local/go/bin/go"}, order)
	for p, f := range goEntries {
		assert.Zero(t, f.header.Uid, "%s owned by root", p)
	}
	assert.Equal(t, int64(0o755), goEntries["/usr/local/go/bin/go"].header.Mode)

	again, err := BuildRunImage(context.Background(), opts)
	require.NoError(t, err)
	assert.False(t, again.Built, "nothing changed")
	assert.Equal(t, image.Size, again.Size)
}
