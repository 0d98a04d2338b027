package dockerd

import (
	"context"
	"encoding/json"
	"net/http"
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

// TestEngine starts a real engine, asks it what it is, and stops it: nothing of it may be left
// on this machine but its run directory.
func TestEngine(t *testing.T) {
	tier.Require(t, "docker", Requirements())
	before := mountsOutside(t, "")
	// Where a containerd dockerd starts itself would write, outside the run directory.
	places := []string{"/opt/containerd", "/var/lib/containerd", "/var/lib/docker", "/etc/docker/key.json"}
	existed := map[string]bool{}
	for _, p := range places {
		_, err := os.Stat(p)
		existed[p] = err == nil
	}
	dir, err := os.MkdirTemp("", "kubelet-walkthrough-dockerd-test-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := Start(ctx, Options{Dir: dir})
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			_ = e.Stop(context.Background())
		}
	}()

	resp, err := e.HTTPClient().Get("http://docker/info")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var info struct {
		DockerRootDir, CgroupDriver, ServerVersion string
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	assert.Equal(t, filepath.Join(dir, "data"), info.DockerRootDir, "its own data root")
	assert.Equal(t, "cgroupfs", info.CgroupDriver)
	assert.NotEmpty(t, info.ServerVersion)

	hostNet, err := os.Readlink("/proc/self/ns/net")
	require.NoError(t, err)
	engineNet, err := os.Readlink(e.NetNS())
	require.NoError(t, err)
	assert.NotEqual(t, hostNet, engineNet, "its own network namespace")

	require.NoError(t, e.Stop(ctx))
	stopped = true
	_, err = os.Stat("/proc/" + strconv.Itoa(e.PID()))
	assert.True(t, os.IsNotExist(err), "the keeper is gone")
	points, err := CgroupMounts()
	require.NoError(t, err)
	assert.Empty(t, CgroupsLeft(points, e.CgroupParent), "no cgroup left")
	assert.Equal(t, before, mountsOutside(t, dir), "no mount left")
	_, err = os.Stat(filepath.Join(dir, "key.json"))
	assert.NoError(t, err, "dockerd's key stays in the run directory (not /etc/docker)")
	for _, p := range places {
		_, err := os.Stat(p)
		assert.Equal(t, existed[p], err == nil, "%s: the engine writes nothing outside its run directory", p)
	}
}

// mountsOutside lists this machine's mount points, but those under skip.
func mountsOutside(t *testing.T, skip string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var points []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fields := strings.Fields(line)
		if skip != "" && strings.HasPrefix(fields[4], skip) {
			continue
		}
		points = append(points, fields[4])
	}
	return points
}
