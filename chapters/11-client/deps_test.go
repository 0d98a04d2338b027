package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeDeps is the sentence of the README that records the package count.
var readmeDeps = regexp.MustCompile(`kubeletclient\x60 depends on \*\*(\d+)\*\* packages outside the standard library`)

// kubeletclient stays light enough to lift into an agent: no kubelet code, none of the
// walkthrough's heavy packages, and as many dependencies as the README says — so that the
// README's figure cannot rot, and a new import that drags in half of Kubernetes shows up here.
func TestKubeletclientDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./kubeletclient").Output()
	require.NoError(t, err)
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		deps = append(deps, p)
		for _, heavy := range []string{"k8s.io/kubernetes/", "/realkubelet", "/toykubelet", "/minicluster"} {
			assert.NotContains(t, p, heavy, "kubeletclient must not import %s", p)
		}
	}
	assert.Contains(t, deps, "k8s.io/client-go/rest", "the list is real")

	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	m := readmeDeps.FindSubmatch(readme)
	require.NotNil(t, m, "README.md records the count: \"`kubeletclient` depends on **N** packages outside the standard library\"")
	recorded, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	assert.Equal(t, recorded, len(deps), "update the figure in README.md (go list -deps ./chapters/11-client/kubeletclient, non-standard packages)")
}
