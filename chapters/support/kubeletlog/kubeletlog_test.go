package kubeletlog

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

func TestCapture(t *testing.T) {
	lines := Capture(func() {
		klog.InfoS("Started kubelet", "node", "n1")
		klog.ErrorS(nil, "Failed")
	})
	require.Len(t, lines, 2)
	assert.Regexp(t, `^I kubeletlog_test.go:\d+\] "Started kubelet" node="n1"$`, lines[0])
	assert.Regexp(t, `^E kubeletlog_test.go:\d+\] "Failed"$`, lines[1])
}

func TestToFile(t *testing.T) {
	path := t.TempDir() + "/kubelet.log"
	name, restore, err := ToFile(path)
	require.NoError(t, err)
	assert.Equal(t, path, name)
	klog.InfoS("to the file")
	restore()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"to the file"`)

	name, restore, err = ToFile("")
	require.NoError(t, err)
	assert.FileExists(t, name)
	restore()
	assert.NoFileExists(t, name, "a temporary log is removed")

	// Afterwards klog is silent; Capture still works.
	assert.Empty(t, Capture(func() {}))
	lines := Capture(func() { klog.InfoS("captured") })
	require.Len(t, lines, 1)
}
