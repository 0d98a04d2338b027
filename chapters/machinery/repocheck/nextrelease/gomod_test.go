package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

// go.mod moves to the next release: its require, a replace per staging module of the next release
// (one new, one gone), the requires of staging modules; a replace that is no staging pin stays.
func TestRetarget(t *testing.T) {
	const ours = `module example.com/walk

go 1.26.0

require (
	k8s.io/api v0.37.2
	k8s.io/cri-client v0.0.0
	k8s.io/kubernetes v1.37.2
)

replace (
	example.com/fork => example.com/fork v1.0.0
	k8s.io/api => k8s.io/api v0.37.2
	k8s.io/cri-client => k8s.io/cri-client v0.37.2
	k8s.io/gone => k8s.io/gone v0.37.2
)
`
	next, err := modfile.Parse("go.mod", []byte("module k8s.io/kubernetes\n\ngo 1.27.0\n\nreplace (\n"+
		"\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/cri-client => ./staging/src/k8s.io/cri-client\n"+
		"\tk8s.io/ktesting => ./staging/src/k8s.io/ktesting\n\tgithub.com/x/y => github.com/x/z v1.0.0\n)\n"), nil)
	require.NoError(t, err)

	out, changes, err := retarget([]byte(ours), next, "v1.38.0-beta.0")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"k8s.io/kubernetes v1.37.2 → v1.38.0-beta.0",
		"k8s.io/gone: no longer a staging module of v1.38.0-beta.0, its replace line dropped",
		"k8s.io/ktesting: a new staging module of v1.38.0-beta.0, replaced by k8s.io/ktesting@v0.38.0-beta.0",
		"every staging module's replace line: v0.37.2 → v0.38.0-beta.0",
	}, changes)
	f, err := modfile.Parse("go.mod", out, nil)
	require.NoError(t, err)
	replaces := map[string]string{}
	for _, r := range f.Replace {
		replaces[r.Old.Path] = r.New.Path + "@" + r.New.Version
	}
	assert.Equal(t, map[string]string{
		"example.com/fork":  "example.com/fork@v1.0.0",
		"k8s.io/api":        "k8s.io/api@v0.38.0-beta.0",
		"k8s.io/cri-client": "k8s.io/cri-client@v0.38.0-beta.0",
		"k8s.io/ktesting":   "k8s.io/ktesting@v0.38.0-beta.0",
	}, replaces)
	requires := map[string]string{}
	for _, r := range f.Require {
		requires[r.Mod.Path] = r.Mod.Version
	}
	assert.Equal(t, map[string]string{"k8s.io/api": "v0.38.0-beta.0", "k8s.io/cri-client": "v0.0.0", "k8s.io/kubernetes": "v1.38.0-beta.0"}, requires)

	_, _, err = retarget([]byte("module x\n"), next, "v1.38.0-beta.0")
	assert.ErrorContains(t, err, "go.mod does not require k8s.io/kubernetes")
}

// The Go a release is built with: its .go-version, else its go line; local when this Go is as new.
func TestToolchain(t *testing.T) {
	goLine := func(v string) *modfile.File {
		f, err := modfile.Parse("go.mod", []byte("module k8s.io/kubernetes\n\ngo "+v+"\n"), nil)
		require.NoError(t, err)
		return f
	}
	tests := []struct {
		name, goMod, goVersion, local, want string
	}{
		{"the .go-version", "1.27.0", "1.27.3\n", "go1.26.8", "go1.27.3"},
		{"the go line without one", "1.27.0", "", "go1.26.8", "go1.27.0"},
		{"this Go is new enough", "1.27.0", "1.27.3", "go1.27.4", "local"},
		{"the same Go", "1.26.0", "1.26.8", "go1.26.8", "local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, toolchain(goLine(tt.goMod), tt.goVersion, tt.local))
		})
	}
	assert.Equal(t, "v0.38.0-beta.0", stagingVersion("v1.38.0-beta.0"))
	assert.True(t, strings.HasPrefix(runPattern([]string{"04-runkubelet"}), "^TestChapterREADMEs$/"))
}
