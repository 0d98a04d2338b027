package dockerd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

func TestCgroupWeight(t *testing.T) {
	tests := []struct {
		nice   int
		v2     bool
		weight int
		ok     bool
	}{
		{nice: 0, ok: false},  // the default weight: dockerd makes the parent
		{nice: -5, ok: false}, // never more than the default
		{nice: 1, weight: 820, ok: true},
		{nice: 10, weight: 110, ok: true},
		{nice: 19, weight: 15, ok: true},
		{nice: 25, weight: 15, ok: true}, // the kernel's nice ends at 19
		{nice: 1, v2: true, weight: 80, ok: true},
		{nice: 10, v2: true, weight: 10, ok: true},
		{nice: 19, v2: true, weight: 1, ok: true}, // 1.46: cpu.weight's least is 1
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.nice)+map[bool]string{false: " v1", true: " v2"}[tt.v2], func(t *testing.T) {
			weight, ok := cgroupWeight(tt.nice, tt.v2)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.weight, weight)
		})
	}
}

// A real cgroup parent, made and weighed as the keeper does for nice 19, then removed as it does.
func TestWeighCgroupParent(t *testing.T) {
	points, err := CgroupMounts()
	require.NoError(t, err)
	cpu, file, ok := cpuHierarchy(points)
	if !ok || os.Geteuid() != 0 {
		tier.Unavailable(t, "docker", errors.New("making a cgroup needs root and a hierarchy with the cpu controller"))
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	parent := "/" + CgroupPrefix + "weight-test-" + hex.EncodeToString(b)
	t.Cleanup(func() { _ = removeCgroups(parent, 5*time.Second) })

	require.NoError(t, weighCgroupParent(points, parent, 0))
	assert.NoDirExists(t, filepath.Join(cpu, parent), "nice 0: nothing made, dockerd's defaults")

	require.NoError(t, weighCgroupParent(points, parent, 19))
	got, err := os.ReadFile(filepath.Join(cpu, parent, file))
	require.NoError(t, err)
	want, _ := cgroupWeight(19, file == "cpu.weight")
	assert.Equal(t, strconv.Itoa(want), strings.TrimSpace(string(got)))

	require.NoError(t, removeCgroups(parent, 5*time.Second))
	assert.Empty(t, CgroupsLeft(points, parent))
}
