package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "kubelet.log")
	require.NoError(t, os.WriteFile(existing, []byte("kept"), 0o600))
	for _, tc := range []struct {
		name string
		opts probesOptions
		err  string
	}{
		{"the defaults", probesOptions{nodeName: "walkthrough", timeout: time.Minute}, ""},
		{"the log to stderr", probesOptions{nodeName: "walkthrough", timeout: time.Minute, kubeletLog: "-"}, ""},
		{"no time", probesOptions{nodeName: "walkthrough"}, "--timeout 0s: must be more than 0"},
		{"a name the apiserver refuses", probesOptions{nodeName: "Upper", timeout: time.Minute}, `--node-name "Upper"`},
		{"a log that exists", probesOptions{nodeName: "walkthrough", timeout: time.Minute, kubeletLog: existing}, "--kubelet-log " + existing},
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
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "kept", string(data), "a file the reader names is never overwritten")
}
