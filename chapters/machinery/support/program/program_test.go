package program

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		code    int
		printed string
	}{
		{"success", nil, 0, ""},
		{"an error", errors.New("static pod path x is not a readable directory"), 1, "error: static pod path x is not a readable directory\n"},
		{"already reported", fmt.Errorf("cluster: %w", ErrReported), 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return tt.err }}
			cmd.SetArgs([]string{})
			cmd.SetErr(&stderr)
			assert.Equal(t, tt.code, Run(cmd))
			assert.Equal(t, tt.printed, stderr.String())
		})
	}
}
