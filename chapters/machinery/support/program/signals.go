package program

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Stopping are the signals that end a long-running chapter cleanly: Ctrl-C, a plain kill, and a
// terminal that closes under it (SIGHUP), after which the chapter must still remove what it made.
var Stopping = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// SignalContext returns a copy of ctx that is done when one of the Stopping signals arrives, and
// the function that stops listening for them.
func SignalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, Stopping...)
}
