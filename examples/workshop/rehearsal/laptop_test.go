package rehearsal

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab"
)

// checkLaptop checks, once the day's cluster runs, that the rehearsal is an attendee's day on a
// Linux laptop with Docker Engine: a normal user in the group of the engine's socket, whose
// minikube said nothing about root, whose kubeconfig names the node's own address (Docker
// Desktop's path, through published ports, is TestLabLeavesNothing's), and whose go command
// finds the kubelet's packages in the machine's build cache, so that a chapter's build is a
// link. The lab's own checks of the attendee (its passwd copy, idmapped mounts) are
// chapters/machinery/lab's; runInLab checks that the lab, ended by INSTRUCTOR.md's `minikube
// delete`, left nothing.
func (r *rehearsal) checkLaptop(t *testing.T) {
	me, err := user.Current()
	require.NoError(t, err)
	assert.NotEqual(t, "0", me.Uid, "the rehearsal runs as a normal user")
	assert.Equal(t, lab.AttendeeName, me.Username)
	var socket syscall.Stat_t
	require.NoError(t, syscall.Stat(strings.TrimPrefix(os.Getenv("DOCKER_HOST"), "unix://"), &socket), "the engine's socket (DOCKER_HOST)")
	groups, err := os.Getgroups()
	require.NoError(t, err)
	assert.Contains(t, groups, int(socket.Gid), "the attendee is in the group of the engine's socket")

	starts := 0
	for _, run := range r.ran {
		if strings.HasPrefix(run.cmd.Text, "minikube start") {
			starts++
			assert.NotContains(t, run.printed, `The "docker" driver should not be used with root privileges`, "minikube sees a normal user")
			assert.Contains(t, run.printed, `Done! kubectl is now configured to use "minikube"`)
		}
	}
	require.Positive(t, starts, "the day's commands start minikube")

	output := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = r.root, r.env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
		return strings.TrimSpace(string(out))
	}
	assert.Equal(t, "https://"+output("minikube", "ip")+":8443",
		output("kubectl", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"),
		"Linux with Docker Engine: the kubeconfig names the node's address")
	// go build -n plans without building: a compile step would be a package not in the cache
	// the attendee reads (runInLab put chapter 04's there first). Chapter 04's own main package
	// may be compiled again: its build information, part of its key, says whether the checkout
	// has changes, and the day's commands (or a test beside the rehearsal) may have made some.
	plan := output("go", "build", "-n", "-o", os.DevNull, "./chapters/04-runkubelet")
	assert.Empty(t, compiledPackages(plan, "main"), "as the attendee, a chapter that links the real kubelet compiles none of the kubelet's packages")
	assert.Contains(t, plan, "/link ", "go build -n plans the link")
}

// compiledPackages are the packages (the compiler's -p) a `go build -n` plan compiles, but those
// named.
func compiledPackages(plan string, but ...string) []string {
	var compiled []string
	for _, m := range regexp.MustCompile(`/compile .* -p (\S+)`).FindAllStringSubmatch(plan, -1) {
		if !slices.Contains(but, m[1]) {
			compiled = append(compiled, m[1])
		}
	}
	return compiled
}

// compiledPackages reads what go build -n plans: with an empty build cache, a program's own
// packages and the standard library's are compiled; the package left out by name is not listed.
func TestCompiledPackages(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":     "module example.com/m\n\ngo 1.26\n",
		"main.go":    "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { lib.F() }\n",
		"lib/lib.go": "package lib\n\nfunc F() {}\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	cmd := exec.Command("go", "build", "-n", "-o", os.DevNull, ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOCACHE="+t.TempDir(), "GOFLAGS=", "GOWORK=off")
	plan, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", plan)
	for _, tt := range []struct {
		but  []string
		want []string
		not  []string
	}{
		{but: nil, want: []string{"main", "example.com/m/lib", "runtime"}},
		{but: []string{"main"}, want: []string{"example.com/m/lib", "runtime"}, not: []string{"main"}},
	} {
		got := compiledPackages(string(plan), tt.but...)
		assert.Subset(t, got, tt.want, "but %v", tt.but)
		for _, p := range tt.not {
			assert.NotContains(t, got, p, "but %v", tt.but)
		}
	}
}
