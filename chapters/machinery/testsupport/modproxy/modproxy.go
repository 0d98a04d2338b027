// Package modproxy is a Go module proxy in a directory, for tests that run the go command on
// made-up modules (a kubernetes that moved a function, or asks for a newer Go) with no network:
// Publish puts a module on it, Use points the go command at it, with a module cache of its own.
package modproxy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// Publish puts module path@version, made of files (name → text, go.mod among them), on the proxy
// in dir, as GOPROXY=file://dir serves it.
func Publish(t testing.TB, dir, path, version string, files map[string]string) {
	t.Helper()
	src := t.TempDir()
	Write(t, src, files)
	at := filepath.Join(dir, path, "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	var z bytes.Buffer
	require.NoError(t, zip.CreateFromDir(&z, module.Version{Path: path, Version: version}, src))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".zip"), z.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".mod"), []byte(files["go.mod"]), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".info"), []byte(`{"Version":"`+version+`"}`), 0o644))
	list, _ := os.ReadFile(filepath.Join(at, "list"))
	require.NoError(t, os.WriteFile(filepath.Join(at, "list"), append(list, version+"\n"...), 0o644))
}

// Use points the go command of this test, and of what it runs, at the proxy in dir only, with a
// module cache of its own (removable: -modcacherw), no checksum database and this machine's Go.
func Use(t *testing.T, dir string) {
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(dir))
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw -mod=mod -buildvcs=false")
	t.Setenv("GOTOOLCHAIN", "local")
}

// Write writes files (name → text) under dir.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
}
