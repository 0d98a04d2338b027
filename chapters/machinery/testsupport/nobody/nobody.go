// Package nobody runs a test once more as the user nobody when the tests run as root: root's
// CAP_DAC_OVERRIDE opens any file for writing and enters any directory, so a check of what a
// normal user may not do passes as root without ever being tried.
package nobody

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// uid and gid of nobody on Debian, Ubuntu, Fedora and Alpine.
const uid, gid = 65534, 65534

const marker = "KUBELET_WALKTHROUGH_AS_NOBODY"

// Rerun runs t's test again, in a copy of the test binary, as nobody, and reports its result
// as t's: it returns true when it did, and the caller returns at once. It returns false when
// the test is not root's (a normal user's run, or the rerun itself): the caller goes on. A
// test that reruns has no subtests of its own before Rerun, and its body makes all it needs
// (t.TempDir is then nobody's).
func Rerun(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(marker) != "" {
		return false
	}
	// nobody cannot reach the go command's build directory, nor a 0700 TMPDIR: a directory of
	// its own in /tmp, with a copy of the binary.
	dir, err := os.MkdirTemp("/tmp", "as-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	binary := filepath.Join(dir, "test")
	copyFile(t, os.Args[0], binary)
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	require.NoError(t, os.Chown(tmp, uid, gid))

	cmd := exec.Command(binary, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), marker+"=1", "TMPDIR="+tmp, "HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s, run again as nobody (uid %s):\n%s", t.Name(), strconv.Itoa(uid), out)
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "%s", out)
	return true
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
