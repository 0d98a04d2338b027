package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/modproxy"
)

// The small fixed case: kubernetes v1.1.0 and v1.2.0 on a module proxy in a directory (no
// network), v1.2.0 with pkg/gone removed, func Stay moved two lines down, and a new staging
// module; a repository pinned to v1.1.0 with a chapter on each package and a note citing both.
// The report says which chapter no longer compiles and why, where the citation moved, which
// one is gone, and what changed in go.mod; the repository's go.mod is untouched and the copy
// gone.
func TestReportOnTheNextRelease(t *testing.T) {
	proxy := t.TempDir()
	local := strings.TrimPrefix(runtime.Version(), "go")
	kubernetes := func(version, goMod string, files map[string]string) {
		files["go.mod"] = goMod
		files[".go-version"] = local + "\n"
		modproxy.Publish(t, proxy, "k8s.io/kubernetes", version, files)
	}
	kubernetes("v1.1.0", "module k8s.io/kubernetes\n\ngo 1.26.0\n\nrequire k8s.io/api v0.0.0\n\nreplace k8s.io/api => ./staging/src/k8s.io/api\n", map[string]string{
		"pkg/stays/stays.go": "package stays\n\nfunc Stay() {\n}\n",
		"pkg/gone/gone.go":   "package gone\n\nfunc Gone() {\n}\n",
	})
	kubernetes("v1.2.0", "module k8s.io/kubernetes\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/api v0.0.0\n\tk8s.io/newapi v0.0.0\n)\n\n"+
		"replace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/newapi => ./staging/src/k8s.io/newapi\n)\n", map[string]string{
		"pkg/stays/stays.go": "package stays\n\n// Stay stays.\n\nfunc Stay() {\n}\n",
	})
	for _, v := range []string{"v0.1.0", "v0.2.0"} {
		modproxy.Publish(t, proxy, "k8s.io/api", v, map[string]string{"go.mod": "module k8s.io/api\n\ngo 1.26.0\n", "core/core.go": "package core\n\nconst Kind = \"Pod\"\n"})
	}
	modproxy.Publish(t, proxy, "k8s.io/newapi", "v0.2.0", map[string]string{"go.mod": "module k8s.io/newapi\n\ngo 1.26.0\n"})

	const link = "https://github.com/kubernetes/kubernetes/blob/v1.1.0/"
	repo := t.TempDir()
	goMod := "module example.com/walk\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/api v0.1.0\n\tk8s.io/kubernetes v1.1.0\n)\n\nreplace k8s.io/api => k8s.io/api v0.1.0\n"
	modproxy.Write(t, repo, map[string]string{
		"go.mod":                    goMod,
		"chapters/01-stays/main.go": "package main\n\nimport (\n\t\"k8s.io/api/core\"\n\t\"k8s.io/kubernetes/pkg/stays\"\n)\n\nfunc main() { stays.Stay(); println(core.Kind) }\n",
		"chapters/02-goes/main.go":  "package main\n\nimport \"k8s.io/kubernetes/pkg/gone\"\n\nfunc main() { gone.Gone() }\n",
		"notes/n.md": "[`func Stay()`](" + link + "pkg/stays/stays.go#L3-L4) and [`func Gone()`](" + link + "pkg/gone/gone.go#L3-L4) and " +
			"[`const Kind = \"Pod\"`](" + link + "staging/src/k8s.io/api/core/core.go#L3).\n",
	})
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		git := exec.Command("git", args...)
		git.Dir = repo
		out, err := git.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	modproxy.Use(t, proxy)
	t.Chdir(repo) // where notescheck runs go mod download, as make next does
	goSum := func() {
		tidy := exec.Command("go", "mod", "tidy")
		tidy.Dir = repo
		out, err := tidy.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	goSum()
	before, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)

	var out bytes.Buffer
	cmd := newCommand(context.Background())
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--k8s", "v1.2.0", "--readmes=false"})
	require.NoError(t, cmd.Execute(), "%s", out.String())

	data, err := os.ReadFile(filepath.Join(repo, ".bin", "next", "v1.2.0.md"))
	require.NoError(t, err, "%s", out.String())
	report := string(data)
	for _, want := range []string{
		"# k8s.io/kubernetes v1.2.0 against this repository (pinned: v1.1.0)",
		"- Build: 1 of 2 parts compile (`go build`), 1 pass `go vet` (tests included).",
		"- Citations: 3 checked, 1 hold, 1 moved, 1 whose code is gone.",
		"- k8s.io/kubernetes v1.1.0 → v1.2.0",
		"- k8s.io/newapi: a new staging module of v1.2.0, replaced by k8s.io/newapi@v0.2.0",
		"- every staging module's replace line: v0.1.0 → v0.2.0",
		"- `chapters/01-stays`: compiles, vet passes.",
		"- `chapters/02-goes`: does not compile.",
		"### `go build ./chapters/02-goes/...`",
		"k8s.io/kubernetes/pkg/gone",
		"| notes/n.md:1 | `pkg/stays/stays.go#L3-L4 (func Stay())` | `pkg/stays/stays.go#L5-L6 (func Stay())` |",
		"| notes/n.md:1 | `pkg/gone/gone.go#L3-L4 (func Gone())` | no such file in kubernetes v1.2.0; \"func Gone()\" is neither in pkg/gone/gone.go nor in another file of pkg/gone in kubernetes v1.2.0 |",
		"- README samples: not run (--readmes=false).",
	} {
		assert.Contains(t, report, want)
	}
	after, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the pinned go.mod is untouched")
	_, rest, ok := strings.Cut(out.String(), "A copy of the repository in ")
	require.True(t, ok, "%s", out.String())
	tree, _, _ := strings.Cut(rest, ",")
	assert.NoDirExists(t, tree, "the copy is removed")
}

// The README runs' go test -json: each chapter's result, each failed command with its message
// and diff, and what is not an event (a build that failed).
func TestReadmeResults(t *testing.T) {
	stream := `{"Action":"run","Test":"TestChapterREADMEs"}
{"Action":"output","Test":"TestChapterREADMEs/01-entrypoint","Output":"=== RUN   TestChapterREADMEs/01-entrypoint\n"}
{"Action":"pass","Test":"TestChapterREADMEs/01-entrypoint"}
{"Action":"output","Test":"TestChapterREADMEs/04-runkubelet","Output":"=== RUN   TestChapterREADMEs/04-runkubelet\n"}
{"Action":"output","Test":"TestChapterREADMEs/04-runkubelet/go_run_./chapters/04-runkubelet","Output":"=== RUN   TestChapterREADMEs/04-runkubelet/go_run_./chapters/04-runkubelet\n"}
{"Action":"output","Test":"TestChapterREADMEs/04-runkubelet/go_run_./chapters/04-runkubelet","Output":"    readme_test.go:592: \n"}
{"Action":"output","Test":"TestChapterREADMEs/04-runkubelet/go_run_./chapters/04-runkubelet","Output":"        \t-13 volume plugins\n"}
{"Action":"output","Test":"TestChapterREADMEs/04-runkubelet/go_run_./chapters/04-runkubelet","Output":"--- FAIL: TestChapterREADMEs/04-runkubelet/go_run_./chapters/04-runkubelet (3.00s)\n"}
{"Action":"fail","Test":"TestChapterREADMEs/04-runkubelet/go_run_./chapters/04-runkubelet"}
{"Action":"fail","Test":"TestChapterREADMEs/04-runkubelet"}
{"Action":"output","Test":"TestChapterREADMEs/07-syncloop","Output":"    readme_test.go:380: go build ./chapters/07-syncloop: missing go.sum entry\n"}
{"Action":"fail","Test":"TestChapterREADMEs/07-syncloop"}
{"Action":"output","Test":"TestChapterREADMEs/08-minicluster","Output":"    readme_test.go:535: no private network: unshare refused\n"}
{"Action":"skip","Test":"TestChapterREADMEs/08-minicluster"}
# github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/repocheck
{"ImportPath":"x","Action":"build-output","Output":"repocheck/x.go:1: undefined: y\n"}
`
	chapters, failed, other := readmeResults(stream)
	assert.Equal(t, []readmeResult{
		{name: "01-entrypoint", action: "pass"},
		{name: "04-runkubelet", action: "fail"},
		{name: "07-syncloop", action: "fail", output: "    readme_test.go:380: go build ./chapters/07-syncloop: missing go.sum entry"},
		{name: "08-minicluster", action: "skip", output: "    readme_test.go:535: no private network: unshare refused"},
	}, chapters)
	assert.Equal(t, []readmeResult{{
		name:   "04-runkubelet/go_run_./chapters/04-runkubelet",
		action: "fail",
		output: "    readme_test.go:592: \n        \t-13 volume plugins",
	}, {
		name:   "07-syncloop",
		action: "fail",
		output: "    readme_test.go:380: go build ./chapters/07-syncloop: missing go.sum entry",
	}}, failed)
	assert.Equal(t, "# github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/repocheck\nrepocheck/x.go:1: undefined: y\n", other)
	assert.Equal(t, `^TestChapterREADMEs$/^(01-entrypoint|04-runkubelet)$`, runPattern([]string{"01-entrypoint", "04-runkubelet"}))
}
