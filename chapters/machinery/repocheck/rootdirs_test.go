package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const realkubeletPackage = "github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"

// removesRootDirs is how a TestMain removes, after the tests, what stopped kubelets' pod workers
// made again in their root directories (realkubelet.RemoveRootDirs).
var removesRootDirs = regexp.MustCompile(`\b(realkubelet\.)?RemoveRootDirs\(\)`)

// A stopped kubelet's pod workers go on until the process exits and make their pods' directories
// again in its root directory, in TMPDIR: every package whose tests can start a kubelet removes
// them after its tests, or make test's clean-tmp finds them there, some runs and not others.
func TestKubeletTestsRemoveRootDirs(t *testing.T) {
	out, err := exec.Command("go", "list", "-test", "-deps=false", "-f",
		`{{if .ForTest}}{{.Dir}} {{.ImportPath}} {{join .Deps " "}}{{end}}`, "../...").Output() // the package itself counts: its tests start kubelets
	require.NoError(t, err)
	root, err := filepath.Abs("..") // the repository: TestMain made chapters/ the working directory
	require.NoError(t, err)
	var checked []string
	for line := range strings.Lines(string(out)) {
		dir, deps, _ := strings.Cut(strings.TrimSpace(line), " ") // the package itself, then its dependencies
		if !strings.Contains(" "+deps+" ", " "+realkubeletPackage+" ") {
			continue
		}
		tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		found := false
		for _, f := range tests {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			found = found || removesRootDirs.Match(data)
		}
		rel, err := filepath.Rel(root, dir)
		require.NoError(t, err)
		assert.True(t, found, "%s: its tests can start a kubelet; its TestMain must call realkubelet.RemoveRootDirs() after m.Run()", rel)
		checked = append(checked, rel)
	}
	assert.Subset(t, checked, []string{"chapters/04-runkubelet/realkubelet", "chapters/08-minicluster/minicluster"}, "the check finds the packages that start kubelets")
}
