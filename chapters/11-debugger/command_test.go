package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/testsupport/repo"
)

func TestValidate(t *testing.T) {
	notExecutable := filepath.Join(t.TempDir(), "dlv")
	require.NoError(t, os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o600))
	for _, tc := range []struct {
		name string
		opts debugOptions
		err  string
	}{
		{"the defaults", debugOptions{frames: 3, timeout: time.Minute}, ""},
		{"no callers", debugOptions{frames: 0, timeout: time.Minute}, ""},
		{"negative frames", debugOptions{frames: -1, timeout: time.Minute}, "--frames -1: from 0 to 50"},
		{"too many frames", debugOptions{frames: 51, timeout: time.Minute}, "--frames 51: from 0 to 50"},
		{"no time", debugOptions{frames: 3, timeout: 0}, "--timeout 0s: must be more than 0"},
		{"a Delve that is not there", debugOptions{frames: 3, timeout: time.Minute, dlv: "/nonexistent/dlv"}, "--dlv /nonexistent/dlv: stat /nonexistent/dlv: no such file or directory"},
		{"a directory", debugOptions{frames: 3, timeout: time.Minute, dlv: os.TempDir()}, "not an executable file"},
		{"a file that is not executable", debugOptions{frames: 3, timeout: time.Minute, dlv: notExecutable}, "not an executable file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.validate()
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// The chapter's client (service/rpc2, in the main go.mod) and the Delve it drives (built from
// chapters/support/delve) are one version: a client speaks the API of its own release.
func TestDelvePinsAgree(t *testing.T) {
	version := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/go-delve/delve (v\S+)`)
	var versions []string
	for _, gomod := range []string{"go.mod", "chapters/support/delve/go.mod"} {
		data, err := os.ReadFile(repo.Path(gomod))
		require.NoError(t, err)
		m := version.FindSubmatch(data)
		require.NotNil(t, m, "%s requires github.com/go-delve/delve", gomod)
		versions = append(versions, string(m[1]))
	}
	assert.Equal(t, versions[0], versions[1], "go.mod and chapters/support/delve/go.mod pin Delve")
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
	assert.Contains(t, output.String(), "kubelet-chain runs under Delve, which calls main.kubemarkReplacements at run's first line")
	entries, err := os.ReadDir(run)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing started, nothing written")
}
