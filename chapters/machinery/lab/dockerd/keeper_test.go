package dockerd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// The engine's containerd leaves this machine's /etc alone: with its CRI plugin on (Debian's
// default), containerd makes /etc/cni/net.d at its first start. Each case runs this machine's
// containerd in a private mount namespace whose /etc is an empty tmpfs, and lists what it made
// there; the case with the plugin on shows the test can see what it looks for.
func TestEngineContainerdLeavesEtcAlone(t *testing.T) {
	tier.Require(t, "docker", Requirements())
	for _, tt := range []struct {
		name   string
		config func(root, opt string) string
		made   string
	}{
		{"the engine's configuration", EngineContainerdConfig, ""},
		{"the CRI plugin on, as Debian's containerd has it", func(root, opt string) string {
			return fmt.Sprintf("version = 2\nroot = %q\nstate = \"/run/containerd\"\n[grpc]\n  address = \"/run/containerd/containerd.sock\"\n"+
				"[plugins.\"io.containerd.internal.v1.opt\"]\n  path = %q\n", root, opt)
		}, "/etc/cni\n/etc/cni/net.d\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			config := filepath.Join(dir, "containerd.toml")
			require.NoError(t, os.WriteFile(config, []byte(tt.config(filepath.Join(dir, "root"), filepath.Join(dir, "opt"))), 0o600))
			// containerd runs until its socket answers, then stops; what it made in /etc is listed.
			script := `set -eu
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /etc
containerd --config "$1" >"$2" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.1; done
[ -S /run/containerd/containerd.sock ] || { echo "containerd did not start"; cat "$2"; exit 1; }
sleep 1
kill "$pid"; wait "$pid" || true
find /etc -mindepth 1 | sort`
			out, err := exec.Command("unshare", "--mount", "--propagation", "private", "bash", "-c", script, "containerd-etc",
				config, filepath.Join(dir, "containerd.log")).CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Equal(t, tt.made, string(out))
		})
	}
}
