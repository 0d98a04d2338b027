package realkubelet

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
)

// Where the kubelet cannot go on, it logs one error and calls os.Exit(1): a server that cannot
// listen (pkg/kubelet/server/server.go#L248-L249 (logger.Error(err, "Failed to listen and serve"))),
// modules that do not start (pkg/kubelet/kubelet.go#L1833-L1834 (logger.Error(err, "Failed to start cAdvisor"))).
// No deferred function runs after that: the reason would stay in a log file that nothing
// removes, next to the kubelet's root directory and its serving key. So the logger Start hands
// the kubelet recognises those lines, and before the kubelet ends the process, removes every
// kubelet's root directory, runs what kubeletlog.AtExit registered (the temporary log, the
// mini-cluster's directory), prints the kubelet's reason on the terminal and ends the process
// itself (endRemoving): the kubelet's other goroutines run until the process ends, and some make
// a root directory again — the pod-resources and pods-API listeners, started beside the one that
// failed, make their socket directories in it (cri-client's CreateListener, os.MkdirAll), Run
// makes its own (setupDataDirs).

// exitMessages are the messages of the errors the kubelet logs right before os.Exit(1);
// TestExitMessages holds them to the pinned source.
var exitMessages = map[string]bool{
	"Failed to listen and serve":                          true,
	"Failed to create listener for podResources endpoint": true,
	"Failed to create listener for pods API endpoint":     true,
	"Failed to serve":                                     true,
	"Failed to start cAdvisor":                            true,
	"Kubelet failed to get node info":                     true,
	"Failed to start ContainerManager":                    true,
	"Failed to initialize internal modules":               true,
}

// made are the root directories of every kubelet this process has started.
var made struct {
	sync.Mutex
	dirs []string
	said bool
}

// lastWords is what this process does in the moment between the kubelet's last error and its
// os.Exit(1).
func lastWords(msg string, err error) {
	made.Lock()
	defer made.Unlock()
	if made.said { // a second kubelet failing at the same moment: the first one's words stand
		return
	}
	made.said = true
	for _, dir := range made.dirs {
		removeAll(dir)
	}
	reason := msg
	if err != nil {
		reason += ": " + err.Error()
	}
	kubeletlog.LastWords(fmt.Sprintf("error: the kubelet ended this program: %s", reason))
	endRemoving(made.dirs)
}

// endRemoving ends the process with the kubelet's exit status, 1, by replacing it with a shell
// that removes dirs once more: execve ends every other thread of the process before the shell
// runs, so no goroutine of the kubelet's can make a directory after the shell removed it, as it
// can between any removal here and the kubelet's os.Exit(1). It returns only if it cannot do
// that (no sh or rm on this machine), and then the kubelet's os.Exit(1) follows.
func endRemoving(dirs []string) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return
	}
	rm, err := exec.LookPath("rm")
	if err != nil {
		return
	}
	args := append([]string{"sh", "-c", `rm=$1; shift; "$rm" -rf -- "$@"; exit 1`, "sh", rm}, dirs...)
	_ = syscall.Exec(sh, args, os.Environ())
}

// watchExit returns logger with one addition: an error in exitMessages calls onExit, after the
// line is logged.
func watchExit(logger klog.Logger, onExit func(msg string, err error)) klog.Logger {
	sink := logger.GetSink()
	if sink == nil {
		return logger
	}
	if cd, ok := sink.(callDepthSink); ok {
		sink = cd.WithCallDepth(1) // the kubelet's file:line, not this file's
	}
	return klog.New(exitSink{LogSink: sink, onExit: onExit})
}

// callDepthSink is logr.CallDepthLogSink.
type callDepthSink interface {
	WithCallDepth(depth int) klog.LogSink
}

type exitSink struct {
	klog.LogSink
	onExit func(msg string, err error)
}

// Init does nothing: the wrapped sink was initialised by its own logger.
func (s exitSink) Init(klog.RuntimeInfo) {}

// Info and Enabled are the wrapped sink's, with a frame of their own as Error has.
func (s exitSink) Info(level int, msg string, keysAndValues ...any) {
	s.LogSink.Info(level, msg, keysAndValues...)
}

func (s exitSink) Enabled(level int) bool { return s.LogSink.Enabled(level) }

func (s exitSink) Error(err error, msg string, keysAndValues ...any) {
	s.LogSink.Error(err, msg, keysAndValues...)
	if exitMessages[msg] {
		s.onExit(msg, err)
	}
}

func (s exitSink) WithValues(keysAndValues ...any) klog.LogSink {
	return exitSink{LogSink: s.LogSink.WithValues(keysAndValues...), onExit: s.onExit}
}

func (s exitSink) WithName(name string) klog.LogSink {
	return exitSink{LogSink: s.LogSink.WithName(name), onExit: s.onExit}
}

func (s exitSink) WithCallDepth(depth int) klog.LogSink {
	if cd, ok := s.LogSink.(callDepthSink); ok {
		return exitSink{LogSink: cd.WithCallDepth(depth), onExit: s.onExit}
	}
	return s
}
