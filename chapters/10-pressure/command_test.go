package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

func TestValidate(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "kubelet.log")
	require.NoError(t, os.WriteFile(existing, []byte("kept"), 0o600))
	// The defaults of every story's flags, as NewPressureCommand sets them.
	good := func() *pressureOptions {
		return &pressureOptions{timeout: time.Minute, transitionPeriod: 30 * time.Second,
			runFor: time.Second, maxRestartPeriod: 30 * time.Second, starts: 6, pullDelay: 2 * time.Second}
	}
	validtable.Run(t, good, (*pressureOptions).validate, []validtable.Case[pressureOptions]{
		{Name: "the defaults", Change: func(*pressureOptions) {}},
		{Name: "the log to stderr", Change: func(o *pressureOptions) { o.kubeletLog = "-" }},
		{Name: "no time", Change: func(o *pressureOptions) { o.timeout = 0 }, WantErr: "--timeout 0s: must be more than 0"},
		{Name: "a log that exists", Change: func(o *pressureOptions) { o.kubeletLog = existing }, WantErr: "--kubelet-log " + existing},
		{Name: "a transition period of 0", Change: func(o *pressureOptions) { o.transitionPeriod = 0 }},
		{Name: "a negative transition period", Change: func(o *pressureOptions) { o.transitionPeriod = -time.Second }, WantErr: "--pressure-transition-period -1s: must not be negative"},
		{Name: "the kubelet's default cap", Change: func(o *pressureOptions) { o.maxRestartPeriod = 5 * time.Minute }},
		{Name: "no run", Change: func(o *pressureOptions) { o.runFor = 0 }, WantErr: "--run-for 0s: must be more than 0"},
		{Name: "one start", Change: func(o *pressureOptions) { o.starts = 1 }, WantErr: "--starts 1: 2 to 20"},
		{Name: "a cap the kubelet refuses", Change: func(o *pressureOptions) { o.maxRestartPeriod = 500 * time.Millisecond }, WantErr: "--max-restart-period 500ms: 1s to 5m0s"},
		{Name: "a cap above the kubelet's", Change: func(o *pressureOptions) { o.maxRestartPeriod = 6 * time.Minute }, WantErr: "--max-restart-period 6m0s"},
		{Name: "a pull that takes no time", Change: func(o *pressureOptions) { o.pullDelay = 0 }, WantErr: "--pull-delay 0s: 1s to 1m0s"},
		{Name: "a pull of more than a minute", Change: func(o *pressureOptions) { o.pullDelay = 2 * time.Minute }, WantErr: "--pull-delay 2m0s: 1s to 1m0s"},
	})
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "kept", string(data), "a file the reader names is never overwritten")
}

// Every story checks every flag before it starts, and the defaults pass: with --timeout 0 each
// fails on it, and with a configuration file that is not there each that reads one fails there.
func TestEveryStoryValidatesFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "kubelet-config.yaml")
	for _, story := range []string{"", "qos", "backoff", "pleg", "pulls"} {
		run := func(args ...string) error {
			cmd := NewPressureCommand(t.Context())
			if story != "" {
				args = append([]string{story}, args...)
			}
			cmd.SetArgs(args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			return cmd.Execute()
		}
		assert.EqualError(t, run("--timeout", "0"), "--timeout 0s: must be more than 0", "10-pressure %s", story)
		if story != "backoff" { // it reads no configuration: it would start its kubelet
			assert.ErrorContains(t, run("--config", missing), "--config "+missing+": ", "10-pressure %s", story)
		}
	}
}
