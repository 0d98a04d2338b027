package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MakeRootfs itself refuses a directory not its own before it removes anything, also where
// debootstrap is installed and this is root.
func TestMakeRootfsRemovesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "debootstrap"), []byte("#!/bin/sh\n"), 0o755))
	fakeRootfsTools(t, func(string) error { return errors.New("debootstrap ran") })
	var log bytes.Buffer
	err := MakeRootfs(context.Background(), dir, "", "", &log)
	require.ErrorContains(t, err, "a directory that lab rootfs did not make")
	assert.FileExists(t, filepath.Join(dir, "debootstrap"))
	assert.Empty(t, log.String())
}

// fakeRootfsTools lets MakeRootfs run here without root or debootstrap: debootstrap is the
// function given, chroot does nothing.
func fakeRootfsTools(t *testing.T, debootstrap func(target string) error) {
	t.Helper()
	lp, rr, rt := lookPath, realRoot, runTool
	t.Cleanup(func() { lookPath, realRoot, runTool = lp, rr, rt })
	lookPath = func(string) (string, error) { return "/usr/sbin/debootstrap", nil }
	realRoot = func() bool { return true }
	runTool = func(_ context.Context, name string, args ...string) ([]byte, error) {
		switch name {
		case "debootstrap":
			return nil, debootstrap(args[slices.Index(args, Suite)+1])
		case "chroot":
			return nil, nil
		case "tar": // the cache's: the real one
			return exec.Command(name, args...).CombinedOutput()
		}
		return nil, fmt.Errorf("unexpected %s", name)
	}
}

// The in-progress marker goes into the directory before debootstrap runs, so that a
// debootstrap that stops leaves a directory lab rootfs takes again (and nothing else does);
// the finished root file system carries only its done marker.
func TestRootfsMarkerBeforeDebootstrap(t *testing.T) {
	t.Run("debootstrap stops", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "rootfs")
		fakeRootfsTools(t, func(target string) error {
			assert.Equal(t, dir, target)
			assert.FileExists(t, filepath.Join(target, rootfsMaking), "the marker is there before debootstrap runs")
			require.NoError(t, os.MkdirAll(filepath.Join(target, "debootstrap"), 0o755))
			return errors.New("E: Couldn't download packages")
		})
		require.ErrorContains(t, MakeRootfs(context.Background(), dir, "http://deb.debian.org/debian", "", io.Discard), "debootstrap: E: Couldn't download packages")
		assert.NoError(t, CheckRootfsDir(dir), "a debootstrap that stopped leaves a directory lab rootfs takes again")
		assert.False(t, RootfsReady(dir))
	})
	t.Run("done", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "rootfs")
		fakeRootfsTools(t, func(target string) error {
			assert.FileExists(t, filepath.Join(target, rootfsMaking), "the marker is there before debootstrap runs")
			return os.MkdirAll(filepath.Join(target, "usr"), 0o755)
		})
		require.NoError(t, MakeRootfs(context.Background(), dir, "http://deb.debian.org/debian", "", io.Discard))
		assert.True(t, RootfsReady(dir))
		assert.NoFileExists(t, filepath.Join(dir, rootfsMaking))
		assert.NoError(t, CheckRootfsDir(dir))
	})
	kicbase, err := os.ReadFile("kicbase.go")
	require.NoError(t, err)
	assert.Contains(t, string(kicbase), `"--exclude=./"+rootfsMaking`, "the base image leaves the marker out")
}

// A root file system made is kept in the cache, and the next one of the same recipe and mirror
// (a new clone's) is unpacked from there, without debootstrap; a copy older than a week, or
// with another mirror, is made anew; no cache, no copy; root unpacks no other user's copy.
func TestRootfsCache(t *testing.T) {
	const mirror = "http://deb.debian.org/debian"
	debootstraps := 0
	fakeRootfsTools(t, func(target string) error {
		debootstraps++
		if err := os.MkdirAll(filepath.Join(target, "usr", "bin"), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(target, "usr", "bin", "made"), []byte(strconv.Itoa(debootstraps)), 0o755)
	})
	cache := filepath.Join(t.TempDir(), "cache")
	made := func(t *testing.T, mirror, cache string) (log string, which string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "rootfs")
		var b bytes.Buffer
		require.NoError(t, MakeRootfs(context.Background(), dir, mirror, cache, &b))
		require.True(t, RootfsReady(dir))
		assert.NoFileExists(t, filepath.Join(dir, rootfsMaking))
		data, err := os.ReadFile(filepath.Join(dir, "usr", "bin", "made"))
		require.NoError(t, err)
		return b.String(), string(data)
	}

	log, which := made(t, mirror, cache)
	assert.Equal(t, "1", which)
	assert.Contains(t, log, "Root file system made in")
	archives, err := filepath.Glob(filepath.Join(cache, Suite+"-*.tar"))
	require.NoError(t, err)
	require.Len(t, archives, 1, "one copy kept")
	tmp, err := filepath.Glob(filepath.Join(cache, ".rootfs-*"))
	require.NoError(t, err)
	assert.Empty(t, tmp, "no half-written copy left")

	log, which = made(t, mirror, cache)
	assert.Equal(t, "1", which, "the copy, unpacked")
	assert.Equal(t, 1, debootstraps, "no debootstrap")
	assert.Contains(t, log, "Root file system from the cache "+archives[0])

	_, which = made(t, "http://other.example/debian", cache)
	assert.Equal(t, "2", which, "another mirror: made anew")

	old := time.Now().Add(-RootfsCacheAge - time.Hour)
	require.NoError(t, os.Chtimes(archives[0], old, old))
	_, which = made(t, mirror, cache)
	assert.Equal(t, "3", which, "a copy older than a week: made anew")
	_, which = made(t, mirror, cache)
	assert.Equal(t, "3", which, "and kept again")

	before := debootstraps
	_, which = made(t, mirror, "")
	assert.Equal(t, strconv.Itoa(before+1), which, "no cache: debootstrap")

	// Root unpacks only a copy it wrote itself: another user's, in root's cache, is made anew.
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(archives[0], 65534, 65534))
		before = debootstraps
		_, which = made(t, mirror, cache)
		assert.Equal(t, strconv.Itoa(before+1), which, "another user's copy: made anew, not unpacked")
	}
}

// DebianMirror takes apt's own reading of its sources: the first that serves a Debian suite
// (bookworm-security is not one: it serves only the security updates); none without one, or
// without apt.
func TestDebianMirror(t *testing.T) {
	tests := []struct {
		name, apt string
		err       error
		want      string
	}{
		{"Debian", "deb http://deb.debian.org/debian-security/ bookworm-security\ndeb http://mirror.example/debian/ bookworm\ndeb-src http://other.example/debian/ bookworm\n", nil, "http://mirror.example/debian"},
		{"Ubuntu", "deb http://archive.ubuntu.com/ubuntu/ noble\n", nil, ""},
		{"no apt", "", errors.New(`exec: "apt-get": executable file not found in $PATH`), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := runTool
			t.Cleanup(func() { runTool = rt })
			runTool = func(_ context.Context, name string, args ...string) ([]byte, error) {
				require.Equal(t, "apt-get", name)
				require.Equal(t, "indextargets", args[0])
				return []byte(tt.apt), tt.err
			}
			assert.Equal(t, tt.want, DebianMirror(context.Background()))
		})
	}
}
