package repocheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/dockerd"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// TestPrerequisites runs .ci/prerequisites (make test's first step) on a machine that has none of
// them — no program on PATH but id, no file where the packages put theirs — as root, as a normal
// user, and as a normal user under CI: it must end at once, name every package it requires and
// say how to install them; as a normal user only what every tier needs is required.
func TestPrerequisites(t *testing.T) {
	bin := t.TempDir()
	id, err := exec.LookPath("id")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(id, filepath.Join(bin, "id")))
	empty := t.TempDir()
	script, err := filepath.Abs("../.ci/prerequisites")
	require.NoError(t, err)

	everyTier := []string{"gcc", "libc6-dev", "iproute2", "util-linux"}
	rootTiers := []string{"pkg-config", "libseccomp-dev", "debootstrap", "docker.io", "jq", "curl", "openssl", "zsh"}
	tests := []struct {
		name     string
		asUser   bool
		ci       bool
		fails    bool
		required []string
		noted    []string
	}{
		{name: "root", required: append(everyTier, rootTiers...), fails: true},
		{name: "a normal user", asUser: true, required: everyTier, noted: rootTiers, fails: true},
		{name: "a normal user under CI", asUser: true, ci: true, required: append(everyTier, rootTiers...), fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{script}
			if tt.asUser {
				switch {
				case dockerd.RealRoot():
					setpriv, err := exec.LookPath("setpriv")
					require.NoError(t, err)
					args = append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash"}, args...)
				case os.Geteuid() != 0: // a normal user already
					args = append([]string{"/bin/bash"}, args...)
				default: // uid 0 in a user namespace (the README runs' TestMain): setpriv cannot leave it
					tier.Unavailable(t, "root", errors.New("uid 0 in a user namespace can neither run the script as a normal user nor stand for the machine's root"))
				}
			} else {
				if !dockerd.RealRoot() {
					tier.Unavailable(t, "root", errors.New("the root case needs the machine's root"))
				}
				args = append([]string{"/bin/bash"}, args...)
			}
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Env = []string{"PATH=" + bin, "PREREQUISITES_ROOT=" + empty}
			if tt.ci {
				cmd.Env = append(cmd.Env, "CI=true")
			}
			start := time.Now()
			out, err := cmd.CombinedOutput()
			assert.Less(t, time.Since(start), time.Minute)
			if tt.fails {
				require.Error(t, err, "%s", out)
			}
			text := string(out)
			assert.Contains(t, text, "Install Go 1.26 or newer", "Go itself is named")
			install := ""
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "Install them with: sudo apt-get install -y ") {
					install = strings.TrimPrefix(line, "Install them with: sudo apt-get install -y ")
				}
			}
			assert.ElementsMatch(t, tt.required, strings.Fields(install), "one command installs every required package:\n%s", text)
			for _, p := range tt.noted {
				assert.Contains(t, text, "  "+p+": ", "a package of the root tiers is named as not installed")
			}
		})
	}

	// The packages .ci/run installs are the ones the script requires.
	out, err := exec.Command(script, "--packages").Output()
	require.NoError(t, err)
	assert.ElementsMatch(t, append(everyTier, rootTiers...), strings.Fields(string(out)))
}
