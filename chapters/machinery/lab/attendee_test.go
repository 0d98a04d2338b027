package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/dockerd"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// The laptop, without an engine: the attendee's commands run as a normal user in the docker
// group, write a directory of root's as its owner (the disk keeps root's), and read the
// attendee's passwd line; this machine's mounts and /etc stay as they were, and nothing of
// the laptop is left when it stops.
func TestLaptop(t *testing.T) {
	tier.Require(t, "root", AttendeeRequirements())
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	owned := filepath.Join(dir, "root-only")
	require.NoError(t, os.Mkdir(owned, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(owned, "old"), []byte("root's\n"), 0o600))

	passwd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	group, err := os.ReadFile("/etc/group")
	require.NoError(t, err)
	id := pickIdentity(string(passwd), string(group))
	// The way to the directory may be root's alone (make test's TMPDIR is 0700): the mount
	// goes where the lab would put it.
	mounts, err := mountPoints([]string{owned}, os.Stat)
	require.NoError(t, err)
	spec := laptopSpec{UID: id.UID, GID: id.GID, Mounts: mounts,
		Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group")}
	require.NoError(t, writeIdentityFiles(spec, passwdWith(string(passwd), id, dir), groupWith(string(group), id)))
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)

	p, err := startLaptop(nil, id, spec)
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			p.stop()
		}
	}()
	// The lab's /etc/passwd and /etc/group are not the attendee's to write, there or where the
	// lab wrote them.
	script := "id -u; id -g; id -G; id -un; cat old; echo attendee\\'s > new; stat -c '%u %U' . new; " +
		"for f in /etc/passwd /etc/group " + spec.Passwd + " " + spec.Group + "; do echo x 2>/dev/null >> $f && echo $f written; done; true"
	out, err := exec.Command("nsenter", append(p.enter(owned), "sh", "-c", script)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	want := fmt.Sprintf("%d\n%d\n%d %d\n%s\nroot's\n%d %s\n%d %s\n", id.UID, id.GID, id.GID, id.Docker, AttendeeName, id.UID, AttendeeName, id.UID, AttendeeName)
	assert.Equal(t, want, string(out))

	// On the disk, what the attendee wrote is root's, as the directory is.
	info, err := os.Stat(filepath.Join(owned, "new"))
	require.NoError(t, err)
	assert.Equal(t, uint32(0), info.Sys().(*syscall.Stat_t).Uid)
	// This machine's mounts and users are what they were.
	after, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.Equal(t, string(mountinfo), string(after))
	now, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	assert.Equal(t, string(passwd), string(now))

	pid := p.cmd.Process.Pid
	p.stop()
	stopped = true
	_, err = os.Stat(fmt.Sprintf("/proc/%d", pid))
	assert.True(t, os.IsNotExist(err), "the laptop's nsenter is gone")
	assert.Empty(t, LeftBehind(dir, dockerd.State{}, false), "no process names the laptop's files")
}
