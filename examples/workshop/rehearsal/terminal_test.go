package rehearsal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/syncbuf"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/terminal"
)

// converse runs a command whose sample shows a program's prompt (Command.Typed): in a terminal of
// its own, as an attendee runs it, typing each line the sample shows after the prompt when the
// program shows its prompt again. The terminal echoes what is typed, so the output reads as the
// sample does. It returns the output and the command's error.
func (r *rehearsal) converse(c Command, timeout time.Duration) (string, error) {
	t := r.t
	t.Helper()
	typist, term, err := terminal.Open()
	require.NoError(t, err, "a terminal for %s", c)
	defer typist.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", c.Text)
	cmd.Dir = r.root
	cmd.Env = append([]string{}, r.env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	require.NoError(t, cmd.Start(), "%s", c)
	term.Close()
	var out syncbuf.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := typist.Read(buf)
			out.Write(buf[:n])
			if err != nil { // EIO once the command and everything it started have closed the terminal
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	typed := 0
	lines := c.Typed()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-read:
			case <-time.After(5 * time.Second):
			}
			if typed < len(lines) && err == nil {
				err = fmt.Errorf("it ended before %q was typed", lines[typed])
			}
			return out.String(), err
		case <-tick.C:
			if typed < len(lines) && strings.Count(out.String(), prompt) > typed {
				_, err := typist.Write([]byte(lines[typed] + "\n"))
				require.NoError(t, err)
				typed++
			}
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Fatalf("%s\ndid not end within %s (%d of %d lines typed); it printed:\n%s", c, timeout, typed, len(lines), out.String())
		}
	}
}

// conversation runs a command that shows a program's prompt (converse) and checks it as run
// checks any other: it must exit 0 unless its sample shows a failure, and print its sample.
func (r *rehearsal) conversation(c Command, where string, timeout time.Duration) run {
	t := r.t
	t.Helper()
	start := time.Now()
	out, err := r.converse(c, timeout)
	res := run{cmd: c, out: out, printed: out, failed: err != nil}
	if *showOutput {
		t.Logf("%s $ %s  (%.1fs, %d lines typed)\n%s", where, c.Text, time.Since(start).Seconds(), len(c.Typed()), strings.Join(Lines(out), "\n"))
	} else {
		t.Logf("%s $ %s  (%.1fs, %d lines typed)", where, c.Text, time.Since(start).Seconds(), len(c.Typed()))
	}
	switch {
	case res.failed && !c.MayFail():
		t.Fatalf("%s %s\nfailed (%v), and its sample shows no failure; it printed:\n%s", where, c, err, out)
	case !res.failed && c.MustFail():
		t.Fatalf("%s %s\nsucceeded, and its sample shows nothing but a failure; it printed:\n%s", where, c, out)
	}
	if miss := Match(c.Sample, out, res.failed); miss != "" {
		t.Fatalf("%s %s\ndid not print what its sample shows (first line missing: %q); it printed:\n%s", where, c, miss, out)
	}
	r.ran = append(r.ran, res)
	return res
}

// A command that shows a prompt is run in a terminal and typed into, a line each time the prompt
// shows; the terminal's echo makes its output read as the sample does.
func TestConversation(t *testing.T) {
	c := Command{Text: `while read -r -p "(dlv) " line; do echo "ran $line"; [ "$line" = exit ] && break; done`,
		Sample: []string{"(dlv) break main.main", "ran break main.main", "(dlv) exit", "ran exit"}}
	assert.Equal(t, []string{"break main.main", "exit"}, c.Typed())
	root, err := filepath.Abs(root)
	require.NoError(t, err)
	r := &rehearsal{t: t, root: root, env: []string{"PATH=" + os.Getenv("PATH"), "TERM=dumb"}}
	res := r.conversation(c, "test", time.Minute)
	assert.False(t, res.failed)
	assert.Equal(t, []string{"(dlv) break main.main", "ran break main.main", "(dlv) exit", "ran exit"}, Lines(res.out))
}
