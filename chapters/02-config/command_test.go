//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A --config that is not a small regular file is refused before the kubelet's loader reads it
// whole: /dev/zero would grow until killed, a FIFO would wait for a writer for ever.
func TestConfigMustBeASmallRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	large := filepath.Join(dir, "large.yaml")
	require.NoError(t, os.WriteFile(large, make([]byte, maxConfigBytes+1), 0o600))

	tests := []struct {
		name, config, want string
	}{
		{"a device that never ends", "/dev/zero", "not a regular file"},
		{"a FIFO", fifo, "not a regular file (p---------)"},
		{"a directory", dir, "a directory; name a kubelet configuration file"},
		{"more than a configuration holds", large, "1048577 bytes, more than a kubelet configuration file holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewConfigCommand(context.Background())
			cmd.SetArgs([]string{"--config", tt.config})
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			done := make(chan error, 1)
			go func() { done <- cmd.Execute() }()
			select {
			case err := <-done:
				require.Error(t, err)
				assert.Contains(t, err.Error(), "--config "+tt.config+": "+tt.want)
			case <-time.After(30 * time.Second):
				t.Fatal("--config " + tt.config + " was read instead of refused")
			}
		})
	}
}
