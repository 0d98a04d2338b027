package lab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lab's commands check the paths they would write before they write anything: lab rootfs
// removed any directory --rootfs named (as root: `--rootfs ~` was the reader's home), base-image
// replaced any file --out named, images any file where it links kubeadm, kubelet and kubectl,
// and run wrote its shell and kubeconfig into a --dir of the reader's.
func TestOutputChecks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("mine\n"), 0o644))
	full := filepath.Join(dir, "full")
	require.NoError(t, os.MkdirAll(filepath.Join(full, "photos"), 0o755))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	made := filepath.Join(dir, "rootfs")
	require.NoError(t, os.MkdirAll(filepath.Join(made, "usr"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(made, rootfsMarker), []byte("an older recipe\n"), 0o644))
	halfMade := filepath.Join(dir, "half")
	require.NoError(t, os.MkdirAll(filepath.Join(halfMade, "debootstrap"), 0o755))
	archive := filepath.Join(dir, "kicbase.tar")
	require.NoError(t, os.WriteFile(archive, []byte("tar"), 0o644))
	require.NoError(t, os.WriteFile(archive+".inputs", []byte("digest"), 0o644))
	link := filepath.Join(dir, "kubelet")
	require.NoError(t, os.Symlink(file, link))

	tests := []struct {
		name    string
		check   func() error
		wantErr string
	}{
		{"rootfs: new", func() error { return checkRootfsDir(filepath.Join(dir, "new")) }, ""},
		{"rootfs: empty", func() error { return checkRootfsDir(empty) }, ""},
		{"rootfs: one it made", func() error { return checkRootfsDir(made) }, ""},
		{"rootfs: a debootstrap that stopped", func() error { return checkRootfsDir(halfMade) }, ""},
		{"rootfs: the reader's directory", func() error { return checkRootfsDir(full) }, "--rootfs " + full + ": a directory that lab rootfs did not make, and it would remove it to make one: name a new directory"},
		{"rootfs: a file", func() error { return checkRootfsDir(file) }, "--rootfs " + file + ": "},
		{"rootfs: empty name", func() error { return checkRootfsDir("") }, `--rootfs "": name a directory`},
		{"archive: new", func() error { return checkArchive("--out", filepath.Join(dir, "new.tar")) }, ""},
		{"archive: one it wrote", func() error { return checkArchive("--out", archive) }, ""},
		{"archive: the reader's file", func() error { return checkArchive("--out", file) }, "--out " + file + ": a file this command did not write (no notes.txt.inputs beside it), and it is never overwritten: name a new file"},
		{"link: none", func() error { return checkLink(filepath.Join(dir, "kubeadm")) }, ""},
		{"link: one it made", func() error { return checkLink(link) }, ""},
		{"link: a file", func() error { return checkLink(file) }, "--cache: " + file + " is a file, not a link images made, and it is never replaced"},
		{"mirror: default", func() error { return checkMirror("") }, ""},
		{"mirror: http", func() error { return checkMirror("http://deb.debian.org/debian") }, ""},
		{"mirror: file", func() error { return checkMirror("file:///srv/debian") }, ""},
		{"mirror: no scheme", func() error { return checkMirror("deb.debian.org/debian") }, `--mirror "deb.debian.org/debian": want a Debian mirror's http://, https:// or file:// URL`},
		{"mirror: no host", func() error { return checkMirror("http:///debian") }, `--mirror "http:///debian": want`},
		{"run dir: default", func() error { return checkRunDir("") }, ""},
		{"run dir: new", func() error { return checkRunDir(filepath.Join(dir, "lab")) }, ""},
		{"run dir: empty", func() error { return checkRunDir(empty) }, ""},
		{"run dir: the reader's", func() error { return checkRunDir(full) }, "--dir " + full + ": not empty; the lab writes its files there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
	assert.DirExists(t, filepath.Join(full, "photos"))
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(data))
}

// rootfsMarker is the marker images writes: the same name.
func TestRootfsMarker(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("images", "rootfs.go"))
	require.NoError(t, err)
	assert.Contains(t, string(src), `const rootfsDone = "`+rootfsMarker+`"`)
}
