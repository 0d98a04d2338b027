package repo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	tool := filepath.Join(root, "chapters", "machinery", "support", "delve")
	require.NoError(t, os.MkdirAll(filepath.Join(tool, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("// a comment\nmodule "+Module+"\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tool, "go.mod"), []byte("module "+Module+"/chapters/machinery/support/delve\n"), 0o644))

	for _, tc := range []struct{ name, from string }{
		{"the root itself", root},
		{"below a tool module of its own", filepath.Join(tool, "sub")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := find(tc.from)
			require.NoError(t, err)
			assert.Equal(t, root, got)
		})
	}
	_, err := find(t.TempDir())
	assert.ErrorContains(t, err, "no go.mod of module "+Module)
}

func TestRootIsThisRepository(t *testing.T) {
	_, err := os.Stat(Path("chapters", "machinery", "testsupport", "repo", "repo.go"))
	assert.NoError(t, err)
}

func TestMakeEnv(t *testing.T) {
	t.Setenv("MAKEFLAGS", "-Orecurse -j2 --jobserver-auth=3,4 -- TEST_FLAGS=-v")
	t.Setenv("MAKELEVEL", "2")
	t.Setenv("KW_KEPT", "yes")
	env := MakeEnv()
	assert.Contains(t, env, "KW_KEPT=yes")
	for _, kv := range env {
		assert.NotRegexp(t, `^(MAKEFLAGS|MAKELEVEL)=`, kv)
	}
}
