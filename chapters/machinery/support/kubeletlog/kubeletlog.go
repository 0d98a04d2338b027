// Package kubeletlog points klog — the kubelet's logger, a process-wide one — somewhere other
// than stderr, so that a chapter's own output stays readable next to the real kubelet's log;
// and, should the kubelet end the process, removes what was registered and says why
// (AtExit, LastWords).
package kubeletlog

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// setStderrThreshold sets klog's -stderrthreshold, which has no setter function. Above it,
// lines are copied to stderr even when klog writes elsewhere.
func setStderrThreshold(level string) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("stderrthreshold", level)
}

// redirect sends every klog line to w until the returned function restores stderr.
//
// klog writes a line of severity S to the outputs of S and of every lower severity, so only the
// INFO output is w (the others discard): each line reaches w once.
func redirect(w io.Writer) (restore func()) {
	setStderrThreshold("FATAL")
	klog.LogToStderr(false)
	klog.SetOutputBySeverity("INFO", w)
	for _, severity := range []string{"WARNING", "ERROR", "FATAL"} {
		klog.SetOutputBySeverity(severity, io.Discard)
	}
	return func() {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
		setStderrThreshold("ERROR")
	}
}

// silence drops klog's output: what a stopped kubelet's last goroutines log after the program
// is done with them.
func silence() {
	klog.Flush()
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	setStderrThreshold("FATAL")
}

// ToFile sends klog's output to path ("-" keeps stderr; "" makes a temporary file that the
// returned function removes; a file that exists is refused, never overwritten). It returns the file's name, to print for the reader. After the
// returned function, klog is silent: a kubelet's goroutines can outlive its Stop, and what they
// log then is noise.
func ToFile(path string) (string, func(), error) {
	if path == "-" {
		return "stderr", func() {}, nil
	}
	var f *os.File
	var err error
	temporary := path == ""
	// Every handle on the log appends (O_APPEND): ForProgram points standard error at it too
	// (TakeOverStderr), and two handles with their own write positions would each write over
	// what the other wrote — klog's next line over etcd's, gRPC's or the Go runtime's.
	if temporary {
		f, err = createTemp()
	} else {
		// A file the reader names is theirs: never overwritten, also not by a second run. Only
		// they may read it: at -v=8 the kubelet logs the TokenReview bodies it sends, bearer
		// tokens included.
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("kubelet log %s: the file exists; name a new one (it is never overwritten): %w", path, err)
		}
	}
	if err != nil {
		return "", nil, fmt.Errorf("kubelet log: %w", err)
	}
	redirect(f)
	unregister := func() {}
	if temporary {
		name := f.Name()
		unregister = AtExit(func() { _ = os.Remove(name) })
	}
	return f.Name(), func() {
		silence()
		_ = f.Close()
		if temporary {
			_ = os.Remove(f.Name())
		}
		unregister()
	}, nil
}

// createTemp is os.CreateTemp("", "kubelet-walkthrough-*.log") opened for appending: a new
// file, 0600, in os.TempDir.
func createTemp() (*os.File, error) {
	for range 100 {
		name := filepath.Join(os.TempDir(), "kubelet-walkthrough-"+strconv.FormatUint(uint64(rand.Uint32()), 10)+".log")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("a temporary file in %s: %w", os.TempDir(), fs.ErrExist)
}

// klogHeader is "I1130 13:27:11.948563   29998 " — severity, date, time, thread id.
var klogHeader = regexp.MustCompile(`^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ `)

// Capture runs fn with klog writing into a buffer and returns the lines logged, each without
// its date, time and thread id: "I watchdog_linux.go:94] \"Systemd watchdog is not enabled\"".
func Capture(fn func()) []string {
	var buf bytes.Buffer
	restore := redirect(&buf)
	fn()
	restore()
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		if line != "" {
			lines = append(lines, klogHeader.ReplaceAllString(line, "$1 "))
		}
	}
	return lines
}

// ForProgram is ToFile for a program: unless path is "-", the process's standard error goes
// to the log too (TakeOverStderr), and cmd's error output stays on the terminal, for
// program.Run to print the command's error there.
func ForProgram(cmd *cobra.Command, path string) (string, func(), error) {
	name, closeLog, err := ToFile(path)
	if err != nil || path == "-" {
		return name, closeLog, err
	}
	terminal, err := TakeOverStderr(name)
	if err != nil {
		closeLog()
		return "", nil, err
	}
	cmd.SetErr(terminal)
	// A panic or a fatal error of the runtime goes to standard error — the log now — and to the
	// terminal too, where the reader sees why the program ended.
	if terminal != os.Stderr {
		if err := debug.SetCrashOutput(terminal, debug.CrashOptions{}); err != nil {
			closeLog()
			return "", nil, fmt.Errorf("crash output: %w", err)
		}
	}
	exiting.Lock()
	exiting.terminal = terminal
	exiting.Unlock()
	return name, closeLog, nil
}

// The kubelet ends the process with os.Exit(1) where it cannot go on — a port it cannot listen
// on, modules that do not start — right after logging why; no deferred function runs then.
// exiting holds what a program does in that moment instead (LastWords).
var exiting struct {
	sync.Mutex
	terminal io.Writer // the standard error ForProgram kept; nil: os.Stderr
	next     int
	cleanups map[int]func()
}

// AtExit registers fn for LastWords — a temporary file or directory to remove — and returns
// the function that unregisters it, for the path where the program removes it itself.
func AtExit(fn func()) (unregister func()) {
	exiting.Lock()
	defer exiting.Unlock()
	if exiting.cleanups == nil {
		exiting.cleanups = map[int]func(){}
	}
	id := exiting.next
	exiting.next++
	exiting.cleanups[id] = fn
	return func() {
		exiting.Lock()
		defer exiting.Unlock()
		delete(exiting.cleanups, id)
	}
}

// LastWords runs what AtExit registered and prints line on the terminal (standard error as it
// was before ForProgram took it over): what a program does when the kubelet is about to end
// the process, so that it leaves nothing behind and says why.
func LastWords(line string) {
	exiting.Lock()
	defer exiting.Unlock()
	for id, fn := range exiting.cleanups {
		fn()
		delete(exiting.cleanups, id)
	}
	var terminal io.Writer = os.Stderr
	if exiting.terminal != nil {
		terminal = exiting.terminal
	}
	fmt.Fprintln(terminal, line)
}

// TakeOverStderr points this process's standard error (file descriptor 2) at the log file
// path, for the libraries that write there directly rather than through klog — the etcd
// client's zap logger, gRPC — so that nothing they print, even after the program is done with
// them, lands between the program's own lines. It returns the original standard error, where
// the program prints its own errors, and leaves fd 2 on the file until the process exits.
func TakeOverStderr(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kubelet log: %w", err)
	}
	defer func() { _ = f.Close() }()
	return redirectStderr(f)
}
