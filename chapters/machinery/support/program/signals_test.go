package program

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each of the signals that end a chapter ends its context (instead of the process, which would
// skip the chapter's cleanup).
func TestSignalContext(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, stop := SignalContext(context.Background())
			defer stop()
			require.NoError(t, syscall.Kill(syscall.Getpid(), sig))
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not end the context", sig)
			}
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		})
	}
}
