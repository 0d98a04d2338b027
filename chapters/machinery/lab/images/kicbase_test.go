package images

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBaseConfigIsKicbases holds baseConfig against the last stage of minikube's
// deploy/kicbase/Dockerfile at the version chapters/machinery/lab/minikube requires.
func TestBaseConfigIsKicbases(t *testing.T) {
	version := requiredVersion(t, filepath.Join(repoRoot, "chapters/machinery/lab/minikube/go.mod"), "k8s.io/minikube")
	data, err := os.ReadFile(filepath.Join(minikubeDir(t, version), "deploy/kicbase/Dockerfile"))
	require.NoError(t, err)
	instructions := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if keyword, args, ok := strings.Cut(line, " "); ok && slices.Contains([]string{"ENTRYPOINT", "STOPSIGNAL", "ENV", "EXPOSE"}, keyword) {
			instructions[keyword] = append(instructions[keyword], strings.TrimSpace(args))
		}
	}
	config := baseConfig().Config

	require.NotEmpty(t, instructions["ENTRYPOINT"], "kicbase has an ENTRYPOINT")
	var entrypoint []string
	require.NoError(t, json.Unmarshal([]byte(instructions["ENTRYPOINT"][len(instructions["ENTRYPOINT"])-1]), &entrypoint))
	assert.Equal(t, entrypoint, config.Entrypoint, "ENTRYPOINT")

	require.NotEmpty(t, instructions["STOPSIGNAL"], "kicbase has a STOPSIGNAL")
	assert.Equal(t, instructions["STOPSIGNAL"][len(instructions["STOPSIGNAL"])-1], config.StopSignal, "STOPSIGNAL")

	require.NotEmpty(t, instructions["ENV"], "kicbase sets ENV")
	for _, env := range instructions["ENV"] {
		assert.Contains(t, config.Env, env, "ENV")
	}
	require.NotEmpty(t, instructions["EXPOSE"], "kicbase has EXPOSE")
	for _, port := range instructions["EXPOSE"] {
		assert.Contains(t, config.ExposedPorts, port+"/tcp", "EXPOSE")
	}
}
