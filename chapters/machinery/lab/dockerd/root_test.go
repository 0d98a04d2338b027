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
