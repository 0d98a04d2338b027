package pressure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// A logLine is one line of the kubelet's log that a story waits for: its message and its
// key/value pairs, each value as the log prints it.
type logLine struct {
	at     time.Time
	msg    string
	err    error
	values map[string]string
}

// logTap keeps the kubelet's log lines whose message it was asked for, in order, while every
// line still goes where the kubelet's log goes. The kubelet logs through the logger of the
// context it is started with, so a chapter reads it there as from the log file.
type logTap struct {
	wanted map[string]bool

	mu    sync.Mutex
	lines []logLine
	next  chan struct{} // closed and replaced at each line kept
}

func newLogTap(messages ...string) *logTap {
	t := &logTap{wanted: map[string]bool{}, next: make(chan struct{})}
	for _, m := range messages {
		t.wanted[m] = true
	}
	return t
}

// context returns ctx with its logger teeing into the tap.
func (t *logTap) context(ctx context.Context) context.Context {
	// klog.NewContext keeps a logger only with contextual logging on, as the kubelet binary turns
	// it on (and realkubelet.Start too, but after this).
	klog.EnableContextualLogging(true)
	logger := klog.FromContext(ctx)
	sink := logger.GetSink()
	if sink == nil {
		return ctx
	}
	if cd, ok := sink.(callDepthSink); ok {
		sink = cd.WithCallDepth(1) // the kubelet's file:line, not this file's
	}
	return klog.NewContext(ctx, klog.New(tapSink{LogSink: sink, tap: t}))
}

// since returns the lines kept from index from on, and a channel closed at the next one.
func (t *logTap) since(from int) ([]logLine, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]logLine(nil), t.lines[min(from, len(t.lines)):]...), t.next
}

func (t *logTap) keep(msg string, err error, kv []any, bound []any) {
	if !t.wanted[msg] {
		return
	}
	line := logLine{at: time.Now(), msg: msg, err: err, values: map[string]string{}}
	for _, pairs := range [][]any{bound, kv} {
		for i := 0; i+1 < len(pairs); i += 2 {
			line.values[fmt.Sprint(pairs[i])] = fmt.Sprint(pairs[i+1])
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	close(t.next)
	t.next = make(chan struct{})
}

// callDepthSink is logr.CallDepthLogSink.
type callDepthSink interface {
	WithCallDepth(depth int) klog.LogSink
}

type tapSink struct {
	klog.LogSink
	tap   *logTap
	bound []any // WithValues' pairs
}

// Init does nothing: the wrapped sink was initialised by its own logger.
func (s tapSink) Init(klog.RuntimeInfo) {}

func (s tapSink) Enabled(level int) bool { return s.LogSink.Enabled(level) }

func (s tapSink) Info(level int, msg string, keysAndValues ...any) {
	s.LogSink.Info(level, msg, keysAndValues...)
	s.tap.keep(msg, nil, keysAndValues, s.bound)
}

func (s tapSink) Error(err error, msg string, keysAndValues ...any) {
	s.LogSink.Error(err, msg, keysAndValues...)
	s.tap.keep(msg, err, keysAndValues, s.bound)
}

func (s tapSink) WithValues(keysAndValues ...any) klog.LogSink {
	return tapSink{LogSink: s.LogSink.WithValues(keysAndValues...), tap: s.tap, bound: append(append([]any(nil), s.bound...), keysAndValues...)}
}

func (s tapSink) WithName(name string) klog.LogSink {
	return tapSink{LogSink: s.LogSink.WithName(name), tap: s.tap, bound: s.bound}
}

func (s tapSink) WithCallDepth(depth int) klog.LogSink {
	if cd, ok := s.LogSink.(callDepthSink); ok {
		return tapSink{LogSink: cd.WithCallDepth(depth), tap: s.tap, bound: s.bound}
	}
	return s
}
