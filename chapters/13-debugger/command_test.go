package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/13-debugger/headless"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

func TestValidate(t *testing.T) {
	notExecutable := filepath.Join(t.TempDir(), "dlv")
	require.NoError(t, os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o600))
	good := func() *debugOptions { return &debugOptions{frames: 3, timeout: time.Minute} }
	validtable.Run(t, good, (*debugOptions).validate, []validtable.Case[debugOptions]{
		{Name: "the defaults", Change: func(*debugOptions) {}},
		{Name: "no callers", Change: func(o *debugOptions) { o.frames = 0 }},
		{Name: "negative frames", Change: func(o *debugOptions) { o.frames = -1 }, WantErr: "--frames -1: from 0 to 50"},
		{Name: "too many frames", Change: func(o *debugOptions) { o.frames = 51 }, WantErr: "--frames 51: from 0 to 50"},
		{Name: "no time", Change: func(o *debugOptions) { o.timeout = 0 }, WantErr: "--timeout 0s: must be more than 0"},
		{Name: "a Delve that is not there", Change: func(o *debugOptions) { o.dlv = "/nonexistent/dlv" }, WantErr: "--dlv /nonexistent/dlv: stat /nonexistent/dlv: no such file or directory"},
		{Name: "a directory", Change: func(o *debugOptions) { o.dlv = os.TempDir() }, WantErr: "not an executable file"},
		{Name: "a file that is not executable", Change: func(o *debugOptions) { o.dlv = notExecutable }, WantErr: "not an executable file"},
	})
}

// --dlv dlv is the ./dlv that was checked, not whatever Delve PATH finds first: the path run is
// the file validated.
func TestDlvIsTheFileChecked(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dlv"), []byte("#!/bin/sh\n"), 0o700))
	t.Chdir(dir)
	o := &debugOptions{frames: 3, timeout: time.Minute, dlv: "dlv"}
	require.NoError(t, o.validate())
	assert.Equal(t, filepath.Join(dir, "dlv"), o.dlv)
}

// The chapter's client (service/rpc2, in the main go.mod) and the Delve it drives (built from
// chapters/machinery/support/delve) are one version: a client speaks the API of its own release.
func TestDelvePinsAgree(t *testing.T) {
	version := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/go-delve/delve (v\S+)`)
	var versions []string
	for _, gomod := range []string{"go.mod", "chapters/machinery/support/delve/go.mod"} {
		data, err := os.ReadFile(repo.Path(gomod))
		require.NoError(t, err)
		m := version.FindSubmatch(data)
		require.NotNil(t, m, "%s requires github.com/go-delve/delve", gomod)
		versions = append(versions, string(m[1]))
	}
	assert.Equal(t, versions[0], versions[1], "go.mod and chapters/machinery/support/delve/go.mod pin Delve")
}

// The chain refuses to start without a debugger: it would build the real container manager.
func TestChainRefusesWithoutDebugger(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "kubelet-chain")
	out, err := exec.Command("go", "build", "-o", binary, chainPackage).CombinedOutput()
	require.NoError(t, err, "%s", out)
	run := filepath.Join(dir, "run")
	require.NoError(t, os.Mkdir(run, 0o700))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var output bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, run)
	cmd.Stdout, cmd.Stderr = &output, &output
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", output.String())
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, output.String(), "kubelet-chain runs under Delve, which calls main.hollowReplacements at run's first line")
	entries, err := os.ReadDir(run)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing started, nothing written")
}

// The chain stops at every step as a normal user (Delve as nobody when the tests run as root):
// nothing of run's, or of the hollow node's replacements, may need root — the kernel's log, for one,
// is closed to a normal user where kernel.dmesg_restrict is 1.
func TestChainAsANormalUser(t *testing.T) {
	base := ""
	if os.Geteuid() == 0 && !traversable(os.TempDir()) {
		base = "/tmp" // nobody must reach Delve and the chain: not through a 0700 TMPDIR (make test's)
	}
	dir, err := os.MkdirTemp(base, "chain-user-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	dlv := filepath.Join(dir, "dlv")
	require.NoError(t, headless.Build(context.Background(), repo.Path(), dlv))
	binary := filepath.Join(dir, "kubelet-chain")
	out, err := exec.Command("go", "build", "-gcflags="+chainPackage+"=-N -l", "-o", binary, chainPackage).CombinedOutput()
	require.NoError(t, err, "%s", out)
	work := filepath.Join(dir, "chain")
	require.NoError(t, os.Mkdir(work, 0o700))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var as *syscall.SysProcAttr
	if os.Geteuid() == 0 {
		const nobody = 65534
		as = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		for _, p := range []string{dir, work} {
			require.NoError(t, os.Chown(p, nobody, nobody))
		}
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	session, err := headless.Start(ctx, headless.Program{Dlv: dlv, Args: []string{binary, work}, Dir: dir, SysProcAttr: as})
	require.NoError(t, err)
	defer session.Stop()
	var story bytes.Buffer
	o := &debugOptions{frames: 1, out: &story}
	require.NoError(t, o.step(session.Client, paths{}), "%s\n%s", &story, session.Tail())
	for i, s := range chain {
		assert.Contains(t, story.String(), fmt.Sprintf("%2d. %s — ", i+1, shortFunc(s.function)))
	}
	_, err = os.Stat("/var/lib/kubelet")
	assert.True(t, os.IsNotExist(err), "the chain made /var/lib/kubelet")
}

// traversable says whether every directory down to dir lets any user through.
func traversable(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if filepath.Dir(d) == d {
			return true
		}
	}
}
