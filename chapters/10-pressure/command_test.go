package main

import (
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
	good := func() *pressureOptions {
		return &pressureOptions{timeout: time.Minute, transitionPeriod: 30 * time.Second}
	}
	validtable.Run(t, good, (*pressureOptions).validate, []validtable.Case[pressureOptions]{
		{Name: "the defaults", Change: func(*pressureOptions) {}},
		{Name: "the log to stderr", Change: func(o *pressureOptions) { o.kubeletLog = "-" }},
		{Name: "no time", Change: func(o *pressureOptions) { o.timeout = 0 }, WantErr: "--timeout 0s: must be more than 0"},
		{Name: "a log that exists", Change: func(o *pressureOptions) { o.kubeletLog = existing }, WantErr: "--kubelet-log " + existing},
		{Name: "a transition period of 0", Change: func(o *pressureOptions) { o.transitionPeriod = 0 }},
		{Name: "a negative transition period", Change: func(o *pressureOptions) { o.transitionPeriod = -time.Second }, WantErr: "--pressure-transition-period -1s: must not be negative"},
	})
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "kept", string(data), "a file the reader names is never overwritten")

	backoff := func() *pressureOptions {
		return &pressureOptions{runFor: time.Second, maxRestartPeriod: 30 * time.Second, starts: 6}
	}
	validtable.Run(t, backoff, (*pressureOptions).validateBackOff, []validtable.Case[pressureOptions]{
		{Name: "the defaults", Change: func(*pressureOptions) {}},
		{Name: "the kubelet's default cap", Change: func(o *pressureOptions) { o.maxRestartPeriod = 5 * time.Minute }},
		{Name: "no run", Change: func(o *pressureOptions) { o.runFor = 0 }, WantErr: "--run-for 0s: must be more than 0"},
		{Name: "one start", Change: func(o *pressureOptions) { o.starts = 1 }, WantErr: "--starts 1: 2 to 20"},
		{Name: "a cap the kubelet refuses", Change: func(o *pressureOptions) { o.maxRestartPeriod = 500 * time.Millisecond }, WantErr: "--max-restart-period 500ms: 1s to 5m0s"},
		{Name: "a cap above the kubelet's", Change: func(o *pressureOptions) { o.maxRestartPeriod = 6 * time.Minute }, WantErr: "--max-restart-period 6m0s"},
	})
}
