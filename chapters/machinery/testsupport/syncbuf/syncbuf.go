// Package syncbuf is a bytes.Buffer that a running command writes to while a test reads it: the
// command's output, collected in the background, polled until it shows a line.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes from several goroutines and reads them whole.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
