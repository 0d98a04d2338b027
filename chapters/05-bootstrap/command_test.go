package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// The run leaves no root directory behind, also when the real kubelet's pod worker made it again
// after Stop: the chapter's process exits right after run, and nothing removes it later. The
// moment is the toy kubelet's stop, after the real one's (the toy's sync loop logs it): there a
// pod worker of the stopped real kubelet makes its pod's directories again, as it can.
func TestRunLeavesNoRootDir(t *testing.T) {
	_, closeLog, err := kubeletlog.ToFile("") // klog's global lines, out of the test's output
	require.NoError(t, err)
	defer closeLog()
	rootDir := regexp.MustCompile(`"rootDir"="([^"]+)"`)
	var mu sync.Mutex
	var root string
	remade := false
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		if m := rootDir.FindStringSubmatch(args); m != nil && strings.Contains(args, `"msg"="Starting the real kubelet"`) {
			root = m[1]
		}
		if strings.Contains(args, `"msg"="Toy kubelet sync loop stopped"`) && root != "" && !remade {
			remade = os.MkdirAll(filepath.Join(root, "pods", "a-pod-uid", "volumes"), 0o750) == nil
		}
	}, funcr.Options{Verbosity: 1})
	ctx := klog.NewContext(context.Background(), logger)

	o := &bootstrapOptions{KubeletFlags: program.KubeletFlags{StaticPodPath: repo.Path("examples", "static-pods"),
		NodeName: realkubelet.DefaultNodeName, KubeletLog: "-", Wait: 30 * time.Second, Once: true}, out: io.Discard}
	require.NoError(t, o.run(ctx, &cobra.Command{}))
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, root, "the real kubelet logs its root directory")
	require.True(t, remade, "the toy kubelet's sync loop logs that it stopped")
	assert.NoDirExists(t, root, "made again after Stop, and left")
}
