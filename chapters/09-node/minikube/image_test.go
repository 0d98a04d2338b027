package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-node/node"
)

func TestParseDockerfile(t *testing.T) {
	steps, err := parseDockerfile(strings.NewReader("# syntax=docker/dockerfile:1\nFROM scratch\n\nCOPY a \\\n  /b\n# a comment\nentrypoint [\"/b\"]\n"))
	require.NoError(t, err)
	assert.Equal(t, []instruction{
		{keyword: "FROM", args: "scratch", line: 2},
		{keyword: "COPY", args: "a  /b", line: 4},
		{keyword: "ENTRYPOINT", args: `["/b"]`, line: 7},
	}, steps)

	_, err = parseDockerfile(strings.NewReader("FROM scratch\nCOPY a \\\n"))
	assert.ErrorContains(t, err, "ends in a backslash")
}

// docker's .dockerignore rules (moby/patternmatcher): the last matching pattern decides, a
// directory's pattern covers what is in it, ** spans directories, ! lets a path back in.
func TestDockerignore(t *testing.T) {
	d := parseDockerignore("# only the binary\n*\n!.bin/kubelet-client\n**/*.tmp\n/docs\n")
	tests := map[string]bool{
		"README.md":           true,
		".bin/node/rootfs":    true,
		".bin/kubelet-client": false,
		".bin/x.tmp":          true, // a later pattern excludes it again
		"docs/a.md":           true,
		"chapters/a.go":       true,
	}
	for p, want := range tests {
		assert.Equal(t, want, d.excluded(p), p)
	}
	none := parseDockerignore("")
	assert.False(t, none.excluded("anything/at/all"))
	sub := parseDockerignore("examples/**/secret*\n")
	assert.True(t, sub.excluded("examples/a/b/secret.txt"))
	assert.True(t, sub.excluded("examples/secret"))
	assert.False(t, sub.excluded("secret"))
}

// The image of examples/rbac/Dockerfile's shape: the binary at its place with its mode, the
// config's entrypoint and user, the platform of this machine; nothing the .dockerignore leaves
// out.
func TestBuildFromDockerfile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".bin", "node"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".bin", "kubelet-client"), []byte("ELF"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".bin", "node", "big"), []byte("big"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte("*\n!.bin/kubelet-client\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "examples"), 0o755))
	dockerfile := filepath.Join(dir, "examples", "Dockerfile")
	require.NoError(t, os.WriteFile(dockerfile, []byte("FROM scratch\nCOPY .bin/kubelet-client /kubelet-client\nCOPY .bin /all/\nUSER 65532:65532\nENV A=b\nENTRYPOINT [\"/kubelet-client\"]\n"), 0o644))

	var log bytes.Buffer
	img, err := buildFromDockerfile(dir, dockerfile, &log)
	require.NoError(t, err)
	assert.Contains(t, log.String(), "#2 [2/6] COPY .bin/kubelet-client /kubelet-client")
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"/kubelet-client"}, cf.Config.Entrypoint)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Contains(t, cf.Config.Env, "A=b")
	assert.Equal(t, runtime.GOARCH, cf.Architecture)
	assert.Equal(t, "linux", cf.OS)

	files := map[string]int64{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		files[hdr.Name] = hdr.Mode
	}
	assert.Equal(t, int64(0o755), files["kubelet-client"])
	assert.Contains(t, files, "all/kubelet-client", "COPY of a directory copies what .dockerignore lets through")
	assert.NotContains(t, files, "all/node/big", ".dockerignore keeps it out")
}

func TestBuildRefusesWhatNeedsAContainer(t *testing.T) {
	tests := []struct{ dockerfile, want string }{
		{"FROM golang:1.26\n", "only FROM scratch"},
		{"FROM scratch\nRUN go build ./...\n", "Dockerfile:2: RUN is not supported"},
		{"FROM scratch\nCOPY missing /x\n", "no such file in the build context"},
		{"FROM scratch AS a\nFROM scratch\n", "multi-stage"},
		{"COPY a /b\n", "the first instruction must be FROM"},
		{"FROM scratch\nCOPY --from=build /a /b\n", "COPY --from=build is not supported"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(tt.dockerfile), 0o644))
		_, err := buildFromDockerfile(dir, filepath.Join(dir, "Dockerfile"), io.Discard)
		assert.ErrorContains(t, err, tt.want, tt.dockerfile)
	}
}

func TestChangedOptions(t *testing.T) {
	a := node.ExtraOption{Component: "kubelet", Key: "rotate-server-certificates", Value: "true"}
	b := node.ExtraOption{Component: "kubelet", Key: "max-pods", Value: "50"}
	assert.Empty(t, changedOptions(node.ExtraConfig{a, b}, node.ExtraConfig{b, a}))
	assert.Equal(t, node.ExtraConfig{b, a}, changedOptions(node.ExtraConfig{b}, node.ExtraConfig{a}))
	assert.Equal(t, node.ExtraConfig{a}, changedOptions(nil, node.ExtraConfig{a}))
}

func TestOpenEnded(t *testing.T) {
	// What was there arrives; the end of it does not, until done.
	r, done, err := openEnded(strings.NewReader("abc"))
	require.NoError(t, err)
	buf := make([]byte, 3)
	_, err = io.ReadFull(r, buf)
	require.NoError(t, err)
	assert.Equal(t, "abc", string(buf))
	done()
	assert.False(t, isTerminal(r), "a pipe is no terminal")
	devNull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devNull.Close()
	assert.False(t, isTerminal(devNull), "nor is /dev/null, a character device")
}
