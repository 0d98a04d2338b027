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
		{Name: "the defaults", Change: func(*probesOptions) {}},
		{Name: "the log to stderr", Change: func(o *probesOptions) { o.kubeletLog = "-" }},
		{Name: "no time", Change: func(o *probesOptions) { o.timeout = 0 }, WantErr: "--timeout 0s: must be more than 0"},
		{Name: "a name the apiserver refuses", Change: func(o *probesOptions) { o.nodeName = "Upper" }, WantErr: `--node-name "Upper"`},
		{Name: "a log that exists", Change: func(o *probesOptions) { o.kubeletLog = existing }, WantErr: "--kubelet-log " + existing},
	})
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "kept", string(data), "a file the reader names is never overwritten")
}
