// Package probes runs one static pod with a startup, a readiness and a liveness probe on the real
// kubelet (chapter 04's realkubelet) and shows, from the kubelet's own /pods, what each probe's
// answers do to the pod: chapter 09's lesson.
//
// The probes are exec probes. The kubelet's prober runs each one through the CRI's ExecSync, and
// this package answers ExecSync from files: a probe `test -e /answers/NAME` exits 0 when the file
// NAME exists in the answers directory, exits 1 when it does not, and cannot run at all (ExecSync
// fails) when the file holds "error" — the difference between a probe that fails and one that
// errors. Everything else — the probe workers, their periods and thresholds, the results
// managers, the sync loop, the pod worker killing and restarting the container, the status
// manager — is the real kubelet's.
package probes

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	utilexec "k8s.io/utils/exec"
)

// An answer is what one probe's command got.
type answer string

const (
	notRun   answer = "not run"
	passed   answer = "exit 0"
	failed   answer = "exit 1"
	unusable answer = "could not run"
)

// answeringRuntime is the kubelet's CRI runtime service, the real gRPC client to the fake
// runtime, with ExecSync answered from the answers directory; every other call goes over the wire.
type answeringRuntime struct {
	internalapi.RuntimeService
	dir string

	mu    sync.Mutex
	last  map[string]answer // by the answer file's name: the last answer given
	calls map[string]int    // by the answer file's name
}

func newAnsweringRuntime(inner internalapi.RuntimeService, dir string) *answeringRuntime {
	return &answeringRuntime{RuntimeService: inner, dir: dir, last: map[string]answer{}, calls: map[string]int{}}
}

// ExecSync answers `test -e /answers/NAME` as a container whose /answers is the answers directory
// would, and returns what the CRI client returns for a non-zero exit (cri-client's
// remote_runtime.go: a CodeExitError), or an error when the command cannot run.
func (r *answeringRuntime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	if len(cmd) != 3 || cmd[0] != "test" || cmd[1] != "-e" || path.Dir(cmd[2]) != "/answers" {
		return nil, nil, fmt.Errorf("this runtime runs only `test -e /answers/NAME`, not %q", cmd)
	}
	name := path.Base(cmd[2])
	got := passed
	data, err := os.ReadFile(filepath.Join(r.dir, name))
	switch {
	case err != nil:
		got = failed
	case strings.TrimSpace(string(data)) == "error":
		got = unusable
	}
	r.mu.Lock()
	r.last[name] = got
	r.calls[name]++
	r.mu.Unlock()
	switch got {
	case failed:
		return nil, nil, utilexec.CodeExitError{Err: fmt.Errorf("command '%s' exited with 1: ", strings.Join(cmd, " ")), Code: 1}
	case unusable:
		return nil, nil, fmt.Errorf("the command could not run (answers/%s holds \"error\")", name)
	}
	return nil, nil, nil
}

// since reports, for each answer file, the last answer given since mark (notRun when none), and
// the calls made since then.
func (r *answeringRuntime) since(mark map[string]int) (map[string]answer, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, calls := map[string]answer{}, map[string]int{}
	for _, name := range []string{"started", "ready", "alive"} {
		calls[name] = r.calls[name] - mark[name]
		last[name] = notRun
		if calls[name] > 0 {
			last[name] = r.last[name]
		}
	}
	return last, calls
}

// mark is the calls so far, for since.
func (r *answeringRuntime) mark() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for k, v := range r.calls {
		m[k] = v
	}
	return m
}
