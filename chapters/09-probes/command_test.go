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
	good := func() *probesOptions { return &probesOptions{nodeName: "walkthrough", timeout: time.Minute} }
	validtable.Run(t, good, (*probesOptions).validate, []validtable.Case[probesOptions]{
		{"the defaults", func(*probesOptions) {}, ""},
		{"the log to stderr", func(o *probesOptions) { o.kubeletLog = "-" }, ""},
		{"no time", func(o *probesOptions) { o.timeout = 0 }, "--timeout 0s: must be more than 0"},
		{"a name the apiserver refuses", func(o *probesOptions) { o.nodeName = "Upper" }, `--node-name "Upper"`},
		{"a log that exists", func(o *probesOptions) { o.kubeletLog = existing }, "--kubelet-log " + existing},
	})
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "kept", string(data), "a file the reader names is never overwritten")
}
