package dockerd

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

func TestRealRoot(t *testing.T) {
	tests := []struct {
		name   string
		euid   int
		uidMap string
		want   bool
	}{
		{"root of the machine", 0, "         0          0 4294967295\n", true},
		{"root in a user namespace of root's (unshare --map-root-user, as root)", 0, "         0          0          1\n", false},
		{"root in a user namespace of a normal user's", 0, "         0       1000          1\n", false},
		{"a normal user", 1000, "         0          0 4294967295\n", false},
		{"no map", 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, realRoot(tt.euid, tt.uidMap))
		})
	}
}

// In a user namespace a process is uid 0 and not root: the engine's requirements say so.
func TestRequirementsInAUserNamespace(t *testing.T) {
	if os.Getenv("DOCKERD_TEST_IN_USERNS") == "1" {
		err := Requirements()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "needs root")
		return
	}
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
		tier.Unavailable(t, "user namespace", fmt.Errorf("no user namespace can be made here: %w: %s", err, out))
	}
	cmd := exec.Command("unshare", "--user", "--map-root-user", os.Args[0], "-test.run=^TestRequirementsInAUserNamespace$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "DOCKERD_TEST_IN_USERNS=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestRequirementsInAUserNamespace")
}
