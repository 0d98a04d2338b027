package kubeletlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

func TestCapture(t *testing.T) {
	lines := Capture(func() {
		klog.InfoS("Started kubelet", "node", "n1")
		klog.ErrorS(nil, "Failed")
	})
	require.Len(t, lines, 2)
	assert.Regexp(t, `^I kubeletlog_test.go:\d+\] "Started kubelet" node="n1"$`, lines[0])
	assert.Regexp(t, `^E kubeletlog_test.go:\d+\] "Failed"$`, lines[1])
}

func TestToFile(t *testing.T) {
	path := t.TempDir() + "/kubelet.log"
	name, restore, err := ToFile(path)
	require.NoError(t, err)
	assert.Equal(t, path, name)
	klog.InfoS("to the file")
	restore()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"to the file"`)
	// Only its owner reads it: at -v=8 a kubelet's log holds bearer tokens.
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, info.Mode().Perm()&0o077, "the log is %v: readable by others", info.Mode().Perm())

	// A file that exists is the reader's: refused, and left as it was.
	_, _, err = ToFile(path)
	require.ErrorIs(t, err, os.ErrExist)
	assert.Contains(t, err.Error(), "kubelet log "+path+": the file exists; name a new one (it is never overwritten)")
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again), "the existing log is unchanged")

	name, restore, err = ToFile("")
	require.NoError(t, err)
	assert.FileExists(t, name)
	info, err = os.Stat(name)
	require.NoError(t, err)
	assert.Zero(t, info.Mode().Perm()&0o077, "the temporary log is %v: readable by others", info.Mode().Perm())
	restore()
	assert.NoFileExists(t, name, "a temporary log is removed")

	// Afterwards klog is silent; Capture still works.
	assert.Empty(t, Capture(func() {}))
	lines := Capture(func() { klog.InfoS("captured") })
	require.Len(t, lines, 1)
}

// TestForProgram runs a program (this test binary, again) that takes over its standard error
// and then fails: what libraries print to stderr lands in the log, after the program's last
// line too, and the command's error reaches the terminal.
func TestForProgram(t *testing.T) {
	if os.Getenv("KUBELETLOG_PROGRAM") != "" {
		cmd := &cobra.Command{Use: "program", RunE: func(cmd *cobra.Command, _ []string) error {
			_, closeLog, err := ForProgram(cmd, os.Getenv("KUBELETLOG_PROGRAM"))
			if err != nil {
				return err
			}
			defer closeLog()
			// klog and standard error take turns: each line stays (both handles append).
			klog.InfoS("before etcd's line")
			klog.Flush()
			fmt.Fprintln(os.Stderr, `{"level":"warn","logger":"etcd-client","msg":"retrying of unary invoker failed"}`)
			klog.InfoS("after etcd's line")
			klog.Flush()
			if os.Getenv("KUBELETLOG_CRASH") != "" {
				panic("the kubelet fell over")
			}
			fmt.Fprintln(cmd.OutOrStdout(), "Stopped.")
			return errors.New("bad input")
		}}
		code := program.Run(cmd)
		fmt.Fprintln(os.Stderr, "a late line from a goroutine")
		os.Exit(code)
	}
	log := filepath.Join(t.TempDir(), "components.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestForProgram$")
	cmd.Env = append(os.Environ(), "KUBELETLOG_PROGRAM="+log)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Equal(t, "Stopped.\n", stdout.String())
	// (cli.Run says "Data race detection enabled" first in a -race build, before the takeover.)
	terminal := regexp.MustCompile(`(?m)^.*Data race detection enabled\n`).ReplaceAllString(stderr.String(), "")
	assert.Equal(t, "error: bad input\n", terminal, "only the command's error reaches the terminal")
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Regexp(t, `(?s)"before etcd's line"\n\{"level":"warn","logger":"etcd-client","msg":"retrying of unary invoker failed"\}\n.*"after etcd's line"\n`, string(data),
		"klog's lines and standard error's, in turn, none written over")
	assert.Contains(t, string(data), "a late line from a goroutine")
}

// A panic after ForProgram reaches the terminal, not only the log that standard error now is:
// the reader sees why the program ended.
func TestForProgramCrashReachesTheTerminal(t *testing.T) {
	log := filepath.Join(t.TempDir(), "components.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestForProgram$")
	cmd.Env = append(os.Environ(), "KUBELETLOG_PROGRAM="+log, "KUBELETLOG_CRASH=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode(), "a panic's exit code")
	assert.Contains(t, stderr.String(), "panic: the kubelet fell over", "the terminal")
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Contains(t, string(data), "panic: the kubelet fell over", "the log")
}

// LastWords — the moment before the kubelet's os.Exit(1) — runs what AtExit registered, the
// temporary log's removal among them, and prints its line on the terminal; what was unregistered
// (a log closed normally) is left alone.
func TestLastWords(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	temporary, closeTemporary, err := ToFile("")
	require.NoError(t, err)
	defer closeTemporary()
	kept := filepath.Join(dir, "kept.log")
	_, closeKept, err := ToFile(kept)
	require.NoError(t, err)
	defer closeKept()
	closedEarly, closeEarly, err := ToFile("")
	require.NoError(t, err)
	closeEarly()
	ran := 0
	unregister := AtExit(func() { ran++ })
	AtExit(func() { ran += 10 })
	unregister()

	var terminal bytes.Buffer
	exiting.Lock()
	saved := exiting.terminal
	exiting.terminal = &terminal
	exiting.Unlock()
	t.Cleanup(func() {
		exiting.Lock()
		exiting.terminal = saved
		exiting.Unlock()
	})
	LastWords("error: the kubelet ended this program: Failed to listen and serve")

	assert.Equal(t, "error: the kubelet ended this program: Failed to listen and serve\n", terminal.String())
	assert.Equal(t, 10, ran, "only what is still registered runs")
	assert.NoFileExists(t, temporary, "the temporary log is removed")
	assert.NoFileExists(t, closedEarly)
	assert.FileExists(t, kept, "a log the reader named stays")
	LastWords("again")
	assert.Equal(t, 10, ran, "each runs once")
}
