package lab

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	require.NoError(t, os.WriteFile(filepath.Join(made, ".kubelet-walkthrough-rootfs"), []byte("an older recipe\n"), 0o644))
	halfMade := filepath.Join(dir, "half")
	require.NoError(t, os.MkdirAll(filepath.Join(halfMade, "debootstrap"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(halfMade, ".kubelet-walkthrough-rootfs-in-progress"), nil, 0o644))
	// A system directory such as /usr/sbin holds an entry named debootstrap too: lab rootfs, as
	// root, removed such a directory.
	sbin := filepath.Join(dir, "sbin")
	require.NoError(t, os.MkdirAll(sbin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sbin, "debootstrap"), []byte("#!/bin/sh\n"), 0o755))
	oldDebootstrap := filepath.Join(dir, "half-old")
	require.NoError(t, os.MkdirAll(filepath.Join(oldDebootstrap, "debootstrap"), 0o755))
	markerLink := filepath.Join(dir, "link")
	require.NoError(t, os.Mkdir(markerLink, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(sbin, "debootstrap"), filepath.Join(markerLink, ".kubelet-walkthrough-rootfs-in-progress")))
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
		{"rootfs: a debootstrap entry, no marker", func() error { return checkRootfsDir(sbin) }, "--rootfs " + sbin + ": a directory that lab rootfs did not make"},
		{"rootfs: a debootstrap directory, no marker", func() error { return checkRootfsDir(oldDebootstrap) }, "a directory that lab rootfs did not make"},
		{"rootfs: the marker a link, not a file", func() error { return checkRootfsDir(markerLink) }, "a directory that lab rootfs did not make"},
		{"rootfs: the reader's directory", func() error { return checkRootfsDir(full) }, "--rootfs " + full + ": a directory that lab rootfs did not make, and it would remove it to make one: name a new directory (lab rootfs marks its own with .kubelet-walkthrough-rootfs-in-progress, then .kubelet-walkthrough-rootfs)"},
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
	assert.FileExists(t, filepath.Join(sbin, "debootstrap"))
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(data))
}

// The images' version flags are checked as Docker checks a tag (and the Kubernetes version as
// Kubernetes writes one): "--kubernetes-version .." made minikube's cache directory
// cache/linux/amd64/.., and kubeadm, kubelet and kubectl were linked into cache/linux.
func TestCheckVersions(t *testing.T) {
	good := map[string]string{
		"kubernetes-version": "v1.37.2", "etcd-version": "3.7.0-0", "coredns-version": "v1.14.6",
		"pause-version": "3.10.2", "storage-provisioner-version": "v5",
	}
	tests := []struct {
		flag, value, wantErr string
	}{
		{"", "", ""},
		{"kubernetes-version", "v1.38.0-rc.1", ""},
		{"kubernetes-version", "", `--kubernetes-version "": name the image's tag`},
		{"kubernetes-version", "..", `--kubernetes-version "..": not an image tag`},
		{"kubernetes-version", "../../x", `--kubernetes-version "../../x": not an image tag`},
		{"kubernetes-version", "1.37.2", `--kubernetes-version "1.37.2": want a Kubernetes version as its images are tagged`},
		{"kubernetes-version", "v1.37", `--kubernetes-version "v1.37": want a Kubernetes version`},
		{"kubernetes-version", "latest", `--kubernetes-version "latest": want a Kubernetes version`},
		{"etcd-version", "..", `--etcd-version "..": not an image tag`},
		{"etcd-version", "-0", `--etcd-version "-0": not an image tag`},
		{"coredns-version", "v1.14.6:x", `--coredns-version "v1.14.6:x": not an image tag`},
		{"pause-version", strings.Repeat("3", 129), `--pause-version "` + strings.Repeat("3", 129) + `": not an image tag`},
		{"pause-version", strings.Repeat("3", 128), ""},
		{"storage-provisioner-version", "v5 ", `--storage-provisioner-version "v5 ": not an image tag`},
	}
	for _, tt := range tests {
		t.Run(tt.flag+"="+tt.value, func(t *testing.T) {
			cmd := newImagesCommand()
			for flag, value := range good {
				require.NoError(t, cmd.Flags().Set(flag, value))
			}
			if tt.flag != "" {
				require.NoError(t, cmd.Flags().Set(tt.flag, tt.value))
			}
			err := checkVersions(cmd)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// A run directory the reader names holds the lab's kubeconfig and minikube's home with the
// cluster's keys: it is 0700, made new or an empty one of the reader's.
func TestRunDirPrivate(t *testing.T) {
	dir := t.TempDir()
	made := filepath.Join(dir, "new", "lab")
	require.NoError(t, makeRunDir(made))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	require.NoError(t, makeRunDir(empty))
	for _, d := range []string{made, empty} {
		info, err := os.Stat(d)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), d)
	}
}

// TestOwnsNeedsAttendee: --owns says what the attendee writes; without --as-attendee it is refused
// in one line, before any lab starts.
func TestOwnsNeedsAttendee(t *testing.T) {
	cmd := newRunCommand()
	cmd.SetArgs([]string{"--owns", t.TempDir(), "--", "true"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	require.Error(t, err)
	assert.Equal(t, "--owns says what the attendee writes: it needs --as-attendee", err.Error())
}
