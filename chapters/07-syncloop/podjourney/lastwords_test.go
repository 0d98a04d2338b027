package podjourney

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
)

// Should the kubelet end the process (os.Exit(1), realkubelet's lastwords.go), the journey's
// static pod directory goes too. Played in a process of its own, the test binary again.
func TestLastWordsRemoveTheManifests(t *testing.T) {
	if os.Getenv("PODJOURNEY_LAST_WORDS") != "" {
		r, err := newRecorder(Options{})
		require.NoError(t, err)
		fmt.Println(r.dir)
		kubeletlog.LastWords("error: the kubelet ended this program")
		return
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLastWordsRemoveTheManifests$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PODJOURNEY_LAST_WORDS=1", "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s%s", &stdout, &stderr)
	assert.Contains(t, stderr.String(), "error: the kubelet ended this program\n")
	assert.Contains(t, stdout.String(), tmp+"/syncloop-manifests-")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left)
}
