// Package repocheck holds the checks that span the repository: go.mod against the pinned
// kubernetes module (make verify), the layout's import rules (TestImportRules), every
// go:linkname against the pinned source (linkname_test.go), README.md's table of where each
// chapter runs against the Makefile's macOS and Windows builds (platforms_test.go), every
// side-by-side benchmark reporting its ratio (bench_test.go), and every chapter README's
// commands run for real (readme_test.go).
package repocheck

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// stagingProblems compares our go.mod with the go.mod of the k8s.io/kubernetes release it
// requires: every module that kubernetes replaces with ./staging/... must be replaced here by
// the same module at v0.<minor>.<patch> of that release. It returns one line per problem,
// each naming the module.
func stagingProblems(ours, kubernetes *modfile.File) []string {
	var k8sVersion string
	for _, r := range ours.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			k8sVersion = r.Mod.Version
		}
	}
	if k8sVersion == "" {
		return []string{"go.mod does not require k8s.io/kubernetes"}
	}
	want := "v0" + strings.TrimPrefix(semver.Canonical(k8sVersion), semver.Major(k8sVersion))

	have := map[string]string{}
	for _, r := range ours.Replace {
		have[r.Old.Path] = r.New.Path + "@" + r.New.Version
	}
	var problems []string
	for _, r := range kubernetes.Replace {
		if !strings.HasPrefix(r.New.Path, "./staging/") {
			continue
		}
		name := r.Old.Path
		got, ok := have[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: no replace line; add `%s => %s %s`", name, name, name, want))
		case got != name+"@"+want:
			problems = append(problems, fmt.Sprintf("%s: replaced by %s, want %s@%s to match k8s.io/kubernetes %s", name, got, name, want, k8sVersion))
		}
	}
	return problems
}

// kubernetesGoMod reads the go.mod of the k8s.io/kubernetes release that ours requires, through
// the go command (from the module cache, or downloaded by it).
func kubernetesGoMod(t *testing.T, ours *modfile.File) *modfile.File {
	t.Helper()
	var version string
	for _, r := range ours.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			version = r.Mod.Version
		}
	}
	require.NotEmpty(t, version, "go.mod must require k8s.io/kubernetes")
	out, err := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@"+version).Output()
	require.NoError(t, err)
	var info struct{ GoMod string }
	require.NoError(t, json.Unmarshal(out, &info))
	data, err := os.ReadFile(info.GoMod)
	require.NoError(t, err)
	f, err := modfile.Parse(info.GoMod, data, nil)
	require.NoError(t, err)
	return f
}

func parseGoMod(t *testing.T, path string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := modfile.Parse(path, data, nil)
	require.NoError(t, err)
	return f
}

// TestStagingReplaces is part of `make verify`.
func TestStagingReplaces(t *testing.T) {
	ours := parseGoMod(t, filepath.Join("..", "go.mod"))
	kubernetes := kubernetesGoMod(t, ours)

	staging := 0
	for _, r := range kubernetes.Replace {
		if strings.HasPrefix(r.New.Path, "./staging/") {
			staging++
		}
	}
	require.Positive(t, staging, "the kubernetes go.mod lists no staging replaces")
	t.Logf("k8s.io/kubernetes replaces %d staging modules", staging)

	if problems := stagingProblems(ours, kubernetes); len(problems) > 0 {
		t.Fatalf("go.mod does not match k8s.io/kubernetes:\n  %s", strings.Join(problems, "\n  "))
	}
}

// TestStagingProblems proves the check fails, naming the module, on a broken go.mod.
func TestStagingProblems(t *testing.T) {
	const kubernetes = `module k8s.io/kubernetes
replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/kubelet => ./staging/src/k8s.io/kubelet
	github.com/some/fork => github.com/other/fork v1.0.0
)`
	k8s, err := modfile.Parse("kubernetes.mod", []byte(kubernetes), nil)
	require.NoError(t, err)

	tests := []struct {
		name string
		ours string
		want []string
	}{
		{
			name: "all pinned",
			ours: "module x\nrequire k8s.io/kubernetes v1.37.2\nreplace k8s.io/api => k8s.io/api v0.37.2\nreplace k8s.io/kubelet => k8s.io/kubelet v0.37.2\n",
		},
		{
			name: "one missing",
			ours: "module x\nrequire k8s.io/kubernetes v1.37.2\nreplace k8s.io/api => k8s.io/api v0.37.2\n",
			want: []string{"k8s.io/kubelet: no replace line; add `k8s.io/kubelet => k8s.io/kubelet v0.37.2`"},
		},
		{
			name: "wrong version",
			ours: "module x\nrequire k8s.io/kubernetes v1.37.2\nreplace k8s.io/api => k8s.io/api v0.36.3\nreplace k8s.io/kubelet => k8s.io/kubelet v0.37.2\n",
			want: []string{"k8s.io/api: replaced by k8s.io/api@v0.36.3, want k8s.io/api@v0.37.2 to match k8s.io/kubernetes v1.37.2"},
		},
		{
			name: "no kubernetes",
			ours: "module x\n",
			want: []string{"go.mod does not require k8s.io/kubernetes"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours, err := modfile.Parse("go.mod", []byte(tt.ours), nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, stagingProblems(ours, k8s))
		})
	}
}

// chapterOf returns the chapter number of a package of this module under chapters/NN-name, -1
// for support code and the lab's machinery, and ok=false for anything else.
func chapterOf(pkg string) (n int, ok bool) {
	const prefix = "github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/"
	rest, found := strings.CutPrefix(pkg, prefix)
	if !found {
		return 0, false
	}
	for _, apart := range []string{"machinery/support", "machinery/testsupport", "machinery/lab"} {
		if rest == apart || strings.HasPrefix(rest, apart+"/") {
			return -1, true
		}
	}
	if len(rest) < 3 || rest[2] != '-' {
		return 0, false
	}
	if _, err := fmt.Sscanf(rest[:2], "%d", &n); err != nil {
		return 0, false
	}
	return n, true
}

// forwardImports are the imports of a later chapter that the layout allows, each with its
// reason. The toy kubelet of chapter 05 takes its pods from chapter 06's file source, because in
// the real kubelet too the pod sources (makePodSourceConfig, in NewMainKubelet) exist before
// Bootstrap.Run consumes them; chapter 05 teaches the interface, chapter 06 the source behind
// it, proved equal to the kubelet's.
var forwardImports = map[[2]string]string{
	{"chapters/05-bootstrap/toykubelet", "chapters/06-static-pods/staticpods"}: "the toy's pod source is chapter 06's lesson",
}

// liftable are the packages a reader should be able to lift into an agent of their own, and
// heavy what their code must not import (their tests may: they start real kubelets).
var (
	liftable = []string{"chapters/11-client/kubeletclient", "examples/kubelet-pods/agent"}
	heavy    = []string{"k8s.io/kubernetes/", "/realkubelet", "/toykubelet", "/minicluster"}
)

// importProblems applies the layout's rule to one package's imports, its code's and its tests'
// together: a chapter builds on earlier chapters, on support code and, in its tests only, on
// testsupport and the lab; never on a later chapter (but for forwardImports); support code and
// the lab import no chapter; the liftable packages' code imports no kubelet code.
func importProblems(pkg string, code, tests []string) []string {
	const module = "github.com/kubelet-walkthrough/kubelet-walkthrough/"
	var problems []string
	if slices.Contains(liftable, strings.TrimPrefix(pkg, module)) {
		for _, imp := range code {
			for _, h := range heavy {
				if strings.Contains(imp, h) || imp == strings.TrimSuffix(h, "/") {
					problems = append(problems, fmt.Sprintf("%s must lift into an agent, but imports %s", pkg, imp))
				}
			}
		}
	}
	from, ok := chapterOf(pkg)
	if !ok {
		return problems
	}
	if from >= 0 {
		for _, imp := range code {
			rest := strings.TrimPrefix(imp, module+"chapters/")
			for _, testOnly := range []string{"machinery/testsupport", "machinery/lab"} {
				if rest == testOnly || strings.HasPrefix(rest, testOnly+"/") {
					problems = append(problems, fmt.Sprintf("%s (chapter %02d) imports %s outside its tests (%s)", pkg, from, testOnly, imp))
				}
			}
		}
	}
	for _, imp := range slices.Concat(code, tests) {
		to, ok := chapterOf(imp)
		switch {
		case !ok || to == -1:
		case from == -1:
			problems = append(problems, fmt.Sprintf("%s is support code or the lab but imports chapter %02d (%s)", pkg, to, imp))
		case to > from && forwardImports[[2]string{strings.TrimPrefix(pkg, module), strings.TrimPrefix(imp, module)}] != "":
		case to > from:
			problems = append(problems, fmt.Sprintf("%s (chapter %02d) imports the later chapter %02d (%s)", pkg, from, to, imp))
		}
	}
	return problems
}

// TestImportRules holds every package to the layout README describes.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "../...").Output()
	require.NoError(t, err)
	var problems []string
	packages := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "|")
		require.Len(t, fields, 3, line)
		packages++
		problems = append(problems, importProblems(fields[0], strings.Fields(fields[1]), strings.Fields(fields[2]))...)
	}
	require.Greater(t, packages, 10)
	for _, p := range liftable {
		assert.Contains(t, string(out), "github.com/kubelet-walkthrough/kubelet-walkthrough/"+p+"|", "the liftable package %s exists: the rule checks something", p)
	}
	assert.Empty(t, problems)
}

func TestImportProblems(t *testing.T) {
	const m = "github.com/kubelet-walkthrough/kubelet-walkthrough/"
	tests := []struct {
		name    string
		pkg     string
		imports []string // the code's
		tests   []string // its tests'
		want    int
	}{
		{"earlier chapter and support", m + "chapters/08-minicluster/minicluster", []string{m + "chapters/04-runkubelet/realkubelet", m + "chapters/machinery/support/pki", "k8s.io/api/core/v1"}, nil, 0},
		{"later chapter", m + "chapters/04-runkubelet", []string{m + "chapters/08-minicluster/minicluster"}, nil, 1},
		{"support imports a chapter", m + "chapters/machinery/support/podtable", []string{m + "chapters/11-client/kubeletclient"}, nil, 1},
		{"the lab imports a chapter", m + "chapters/machinery/lab/labtest", []string{m + "chapters/12-node/bootstory"}, nil, 1},
		{"a test uses the lab", m + "chapters/12-node/bootstory", nil, []string{m + "chapters/machinery/lab/labtest"}, 0},
		{"a test uses testsupport", m + "chapters/05-bootstrap", nil, []string{m + "chapters/machinery/testsupport/benchratio"}, 0},
		{"a chapter's code uses the lab", m + "chapters/12-node", []string{m + "chapters/machinery/lab/labtest"}, nil, 1},
		{"a chapter's code uses testsupport", m + "chapters/07-syncloop/podjourney", []string{m + "chapters/machinery/testsupport/journeynote"}, nil, 1},
		{"a later chapter in a test", m + "chapters/04-runkubelet", nil, []string{m + "chapters/08-minicluster/minicluster"}, 1},
		{"examples may use any chapter", m + "examples/workshop/checks", []string{m + "chapters/11-client/kubeletclient"}, nil, 0},
		{"the client package imports kubelet code", m + "chapters/11-client/kubeletclient", []string{"k8s.io/client-go/rest", "k8s.io/kubernetes/pkg/kubelet/server"}, nil, 1},
		{"the client package imports the real kubelet", m + "chapters/11-client/kubeletclient", []string{m + "chapters/04-runkubelet/realkubelet"}, nil, 1},
		{"the client package's tests start kubelets", m + "chapters/11-client/kubeletclient", []string{"k8s.io/client-go/rest"}, []string{m + "chapters/04-runkubelet/realkubelet"}, 0},
		{"the tool may import what it needs", m + "examples/kubelet-pods", []string{"k8s.io/kubernetes/pkg/printers"}, nil, 0},
		{"the tool's library imports kubelet code", m + "examples/kubelet-pods/agent", []string{m + "chapters/11-client/kubeletclient", "k8s.io/kubernetes/pkg/kubelet"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Len(t, importProblems(tt.pkg, tt.imports, tt.tests), tt.want)
		})
	}
}
