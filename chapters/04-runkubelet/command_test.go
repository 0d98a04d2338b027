package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

func TestMain(m *testing.M) {
	code := m.Run()
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}

// podWorkerAfterStop is the chapter's output, and the moment it says it stopped the kubelet it
// does what a stopped kubelet's pod worker can do then, before the process exits: sync its pod,
// making the pod's directories under the root directory again.
type podWorkerAfterStop struct {
	bytes.Buffer
	root string
}

func (w *podWorkerAfterStop) Write(p []byte) (int, error) {
	if dir, ok := strings.CutPrefix(string(p), "Stopped the kubelet and removed "); ok {
		w.root = strings.TrimSpace(dir)
		if err := os.MkdirAll(filepath.Join(w.root, "pods", "a-pod-uid", "volumes"), 0o750); err != nil {
			return 0, err
		}
	}
	return w.Buffer.Write(p)
}

// The run leaves no root directory behind, also when a pod worker made it again after Stop:
// the chapter's process exits right after run, and nothing removes it later.
func TestRunLeavesNoRootDir(t *testing.T) {
	_, closeLog, err := kubeletlog.ToFile("") // the kubelet's lines, out of the test's output
	require.NoError(t, err)
	defer closeLog()
	out := &podWorkerAfterStop{}
	o := &runOptions{KubeletFlags: program.KubeletFlags{StaticPodPath: repo.Path("examples", "static-pods"),
		NodeName: realkubelet.DefaultNodeName, KubeletLog: "-", Wait: 30 * time.Second, Once: true}, out: out}
	require.NoError(t, o.complete())
	require.NoError(t, o.Validate())
	require.NoError(t, o.run(context.Background(), &cobra.Command{}))
	require.NotEmpty(t, out.root, "the chapter says which root directory it removed:\n%s", &out.Buffer)
	assert.NoDirExists(t, out.root, "made again after Stop, and left")
}
