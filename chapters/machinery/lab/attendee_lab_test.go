package lab_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/labtest"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// A lab whose commands run as an attendee runs them: a normal user in the group of the
// engine's socket starts minikube with the start every reader types (minikube says nothing
// about root), builds a chapter with the machine's warm Go caches — a link, not a compile
// of the kubelet's packages — and deletes the cluster as a reader does; the lab then stops,
// and nothing of the attendee or the lab is left on this machine (one of the ends
// TestLabLeavesNothing names).
func TestLabAsAttendee(t *testing.T) {
	tier.Require(t, labtest.Tier, errors.Join(labtest.Requirements(), lab.AttendeeRequirements()))
	root, err := labtest.Root()
	require.NoError(t, err)
	before := lab.TakeTrace()
	passwd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	opts := labtest.Options(root)
	opts.Attendee = labtest.Attendee(root)
	c, err := labtest.StartWith(ctx, root, opts)
	if c != nil {
		defer c.Stop(context.Background())
	}
	require.NoError(t, err)
	t.Logf("minikube start as the attendee: %s (Ready in %s)", c.Started.Round(100*time.Millisecond), c.Ready.Round(100*time.Millisecond))
	assert.True(t, c.Attendee())
	assert.NotContains(t, c.StartOutput, `The "docker" driver should not be used with root privileges`, "minikube sees a normal user")
	assert.Contains(t, c.StartOutput, `Done! kubectl is now configured to use "minikube"`)

	out, err := c.Output(ctx, "sh", "-c", `id -u; id -un; id -Gn; stat -c %G "$(echo "$DOCKER_HOST" | sed 's|^unix://||')"`)
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 4, "%s", out)
	uid, err := strconv.Atoi(lines[0])
	require.NoError(t, err)
	assert.NotZero(t, uid, "id -u in the lab")
	assert.Equal(t, lab.AttendeeName, lines[1])
	assert.Contains(t, strings.Fields(lines[2]), lines[3], "the attendee is in the group of the engine's socket")

	// Linux with Docker Engine: the node's address is reachable, and the kubeconfig names it
	// (TestLabLeavesNothing checks Docker Desktop's path).
	ip, err := c.Output(ctx, "minikube", "ip")
	require.NoError(t, err, "%s", ip)
	server, err := c.Output(ctx, "kubectl", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
	require.NoError(t, err, "%s", server)
	assert.Equal(t, "https://"+strings.TrimSpace(string(ip))+":8443", strings.TrimSpace(string(server)))

	// A chapter that links the real kubelet, built in the checkout as the attendee: with the
	// machine's build cache, a link.
	begin := time.Now()
	build := c.CommandIn(ctx, root, "go", "build", "-o", c.Dir+"/tmp/runkubelet", "./chapters/04-runkubelet")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	took := time.Since(begin)
	t.Logf("go build ./chapters/04-runkubelet as the attendee: %s", took.Round(100*time.Millisecond))
	// A compile of the kubelet's packages takes about 7 minutes on 2 cores; a link, seconds
	// alone and over a minute beside make test's other tests.
	assert.Less(t, took, 3*time.Minute, "a link, not a compile of the kubelet's packages")

	// `minikube delete`, then the lab stops.
	out, err = c.Output(ctx, "minikube", "delete")
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), `Removed all traces of the "minikube" cluster.`)
	require.NoError(t, c.Stop(context.Background()))
	assert.Empty(t, c.Left())
	assert.Empty(t, lab.Leftovers(before, lab.TakeTrace()))
	now, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	assert.Equal(t, string(passwd), string(now), "no user on this machine")
}
