package notescheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pinned is the kubernetes version go.mod requires.
func pinned(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// TestCitations is `make verify-notes`: every citation in the notes, the chapter READMEs and
// the chapters' Go files holds at the pinned version. With K8S_VERSION=v1.38.0 (make
// verify-notes K8S=v1.38.0) it reads that version instead and lists what would break.
func TestCitations(t *testing.T) {
	pin := pinned(t)
	version := pin
	if v := os.Getenv("K8S_VERSION"); v != "" {
		version = v
	}
	checked, problems := CheckTree("..", NewSource(pin, version))
	t.Logf("%d citations checked against k8s.io/kubernetes %s", checked, version)
	require.Positive(t, checked)
	for _, p := range problems {
		t.Error(p)
	}
	if version != pin && len(problems) > 0 {
		t.Logf("upgrade report: %d of %d citations would break moving from %s to %s", len(problems), checked, pin, version)
	}
}

// TestCheckerFindsBrokenCitations proves the checker: each rule has citations it accepts and a
// deliberately wrong one it must reject, naming file and line.
func TestCheckerFindsBrokenCitations(t *testing.T) {
	src := NewSource(pinned(t), pinned(t))
	const link = "https://github.com/kubernetes/kubernetes/blob/" + "v1.37.2"
	const server = link + "/cmd/kubelet/app/server.go"
	tests := []struct {
		name, file, text string
		wantErr          string // empty: valid
	}{
		// Form.
		{"valid file link", "n.md", "[server.go](" + server + ")", ""},
		{"valid staging link", "n.md", "[`func Run(cmd *cobra.Command) int`](" + link + "/staging/src/k8s.io/component-base/cli/run.go#L43-L77)", ""},
		{"lines past the end", "n.md", "[`x`](" + link + "/cmd/kubelet/kubelet.go#L100-L120)", "lines out of range"},
		{"no such file", "n.md", "[`x`](" + link + "/cmd/kubelet/nope.go#L1)", "no such file in kubernetes"},
		{"not a code span", "n.md", "[RunKubelet](" + server + "#L1285-L1339)", "must be one code span"},
		{"another tag", "n.md", "[`func RunKubelet`](https://github.com/kubernetes/kubernetes/blob/v1.36.0/cmd/kubelet/app/server.go#L1285-L1339)", "cites v1.36.0, not the pinned"},
		{"master", "n.md", "[`func RunKubelet`](https://github.com/kubernetes/kubernetes/blob/master/cmd/kubelet/app/server.go#L1285)", "which moves; pin a release tag"},
		{"short form naming nothing", "x.go", "// see cmd/kubelet/app/server.go#L1285-L1339 for more", "must name what the lines hold"},
		{"short form with open parentheses", "x.go", "var s = \"cmd/kubelet/app/server.go#L1285-L1339 (func RunKubelet(\"\nvar t = 1 // )", "must name what the lines hold"},
		{"short form in a string", "x.go", "var s = \"cmd/kubelet/app/server.go#L204 (verflag.PrintAndExitIfRequested())\"", ""},
		{"short form over two comment lines", "x.go", "// see cmd/kubelet/app/server.go#L1285-L1339\n// (func RunKubelet) for more", ""},
		{"a blank line ends a comment", "x.go", "// see cmd/kubelet/app/server.go#L1285-L1339\n\n// (func RunKubelet) for more", "must name what the lines hold"},
		{"short form in Markdown is checked", "n.md", "see `cmd/kubelet/app/server.go#L1285-L1340 (func RunKubelet)`", "func RunKubelet is #L1285-L1339"},

		// Rule 1: a declaration is cited with its own first and last lines.
		{"func", "n.md", "see [`func RunKubelet`](" + server + "#L1285-L1339)", ""},
		{"func with its signature", "x.go", "// cmd/kubelet/app/server.go#L1285-L1339 (func RunKubelet(ctx context.Context, kubeServer *options.KubeletServer, kubeDeps *kubelet.Dependencies) error)", ""},
		{"method", "n.md", "[`func (kl *Kubelet) Run(`](" + link + "/pkg/kubelet/kubelet.go#L1883-L2002)", ""},
		{"type", "n.md", "[`type Bootstrap interface {`](" + link + "/pkg/kubelet/kubelet.go#L297-L306)", ""},
		{"var", "n.md", "[`var DefaultEvictionHard = map[string]string{`](" + link + "/pkg/kubelet/eviction/defaults_linux.go#L22-L28)", ""},
		{"func with its doc comment", "n.md", "\n\n[`func RunKubelet`](" + server + "#L1278-L1339)", "n.md:3: cmd/kubelet/app/server.go#L1278-L1339 (func RunKubelet): func RunKubelet is #L1285-L1339 in v1.37.2"},
		{"func one line short", "n.md", "[`func RunKubelet`](" + server + "#L1285-L1338)", "func RunKubelet is #L1285-L1339"},
		{"func signature only", "n.md", "[`func RunKubelet`](" + server + "#L1285)", "func RunKubelet is #L1285-L1339"},
		{"func elsewhere", "n.md", "[`func RunKubelet`](" + server + "#L1341-L1355)", "func RunKubelet is #L1285-L1339"},
		{"method of another type", "n.md", "[`func (s *Server) Run(`](" + link + "/pkg/kubelet/kubelet.go#L1883-L2002)", "not in those lines"},
		{"type with its doc comment", "n.md", "[`type Bootstrap interface {`](" + link + "/pkg/kubelet/kubelet.go#L296-L306)", "type Bootstrap is #L297-L306"},
		{"var with a line above", "n.md", "[`var DefaultEvictionHard`](" + link + "/pkg/kubelet/eviction/defaults_linux.go#L21-L28)", "var DefaultEvictionHard is #L22-L28"},
		{"short form, wrong func", "x.go", "// cmd/kubelet/app/server.go#L1285-L1339 (func startKubelet)", "x.go:1: cmd/kubelet/app/server.go#L1285-L1339 (func startKubelet): func startKubelet is #L1341-L1355"},

		// Rule 2: quoted text opens the range, which ends where the text, the code it opens, or
		// a run of statements ends.
		{"statement", "n.md", "[`verflag.PrintAndExitIfRequested()`](" + server + "#L204)", ""},
		{"statement with the comment above", "n.md", "[`verflag.PrintAndExitIfRequested()`](" + server + "#L203-L204)", ""},
		{"below a comment, to the end of the else-if it opens", "n.md", "[`} else if err := s.ListenAndServe(); err != nil {`](" + link + "/pkg/kubelet/server/server.go#L216-L220)", ""},
		{"the if a text opens", "n.md", "[`if help {`](" + server + "#L199-L201)", ""},
		{"a run of statements", "n.md", "[`help, err := cleanFlagSet.GetBool(\"help\")`](" + server + "#L195-L201)", ""},
		{"a comment paragraph outside Go", "n.md", "[`The following packages have been migrated to contextual logging.`](" + link + "/hack/logcheck.conf#L24-L26)", ""},
		{"a shell function", "n.md", "[`kube::version::ldflags()`](" + link + "/hack/lib/version.sh#L151-L183)", ""},
		{"text not on the first line", "n.md", "[`verflag.PrintAndExitIfRequested()`](" + server + "#L199-L204)", "begins on line 204, not on the first line of the range"},
		{"range past the if", "n.md", "[`if help {`](" + server + "#L199-L202)", "the range must end where"},
		{"run out of its block", "n.md", "[`return cmd.Help()`](" + server + "#L200-L201)", "the range must end where"},
		{"range past a shell function", "n.md", "[`kube::version::ldflags()`](" + link + "/hack/lib/version.sh#L151-L182)", "the range must end where"},
		{"text moved", "n.md", "[`verflag.PrintAndExitIfRequested()`](" + server + "#L100)", "it is at line 204 now"},
		{"a blank line above the comment", "n.md", "[`verflag.PrintAndExitIfRequested()`](" + server + "#L202-L204)", "begins on line 204"},
		{"range past a comment paragraph", "n.md", "[`The following packages have been migrated to contextual logging.`](" + link + "/hack/logcheck.conf#L24-L27)", "the range must end where"},
		{"text nowhere", "n.md", "[`NoSuchThing()`](" + server + "#L1-L2)", "nor anywhere in the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cites, errs := Extract(tt.file, []byte(tt.text))
			for _, c := range cites {
				if err := src.Check(c); err != nil {
					errs = append(errs, err)
				}
			}
			if tt.wantErr == "" {
				require.Empty(t, errs)
				require.Len(t, cites, 1)
				return
			}
			require.NotEmpty(t, errs, "%v", cites)
			assert.Contains(t, errs[0].Error(), tt.wantErr)
		})
	}
}

// TestBrokenCopyFails breaks one citation in a copy of the real tree, in each kind of file the
// checker covers, and expects exactly that one to be reported.
func TestBrokenCopyFails(t *testing.T) {
	tests := []struct {
		name, file, good, bad string
		wantErr               []string
	}{
		{"a note", "notes/04-runkubelet.md",
			"cmd/kubelet/app/server.go#L1285-L1339)", "cmd/kubelet/app/server.go#L1278-L1339)",
			[]string{"notes/04-runkubelet.md:", "#L1278-L1339 (func RunKubelet)", "func RunKubelet is #L1285-L1339"}},
		{"a chapter's Go comment", "chapters/04-runkubelet/realkubelet/realkubelet.go",
			"cmd/kubelet/app/server.go#L249-L251 (logsapi.ValidateAndApplyAsField)", "cmd/kubelet/app/server.go#L239-L251 (logsapi.ValidateAndApplyAsField)",
			[]string{"chapters/04-runkubelet/realkubelet/realkubelet.go:", "begins on line"}},
		{"a chapter's step table", "chapters/03-run/steps.go",
			"server.go#L660-L665 (watchdog.NewHealthChecker(logger))", "server.go#L660-L665 (healthChecker.Start(ctx))",
			[]string{"chapters/03-run/steps.go:", "begins on line 665"}},
		{"examples' Markdown", "examples/workshop/README.md",
			"# ", "See [`func RunKubelet`](https://github.com/kubernetes/kubernetes/blob/v1.37.2/cmd/kubelet/app/server.go#L1285).\n\n# ",
			[]string{"examples/workshop/README.md:1:", "func RunKubelet is #L1285-L1339"}},
	}
	src := NewSource(pinned(t), pinned(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, dir := range []string{"notes", "chapters", "examples"} {
				require.NoError(t, os.CopyFS(filepath.Join(root, dir), os.DirFS(filepath.Join("..", dir))))
			}
			// What is wrong in the tree already is TestCitations' business, not this test's.
			_, before := CheckTree(root, src)
			known := map[string]bool{}
			for _, p := range before {
				known[p.Error()] = true
			}

			file := filepath.Join(root, tt.file)
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			require.Contains(t, string(data), tt.good)
			require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(data), tt.good, tt.bad, 1)), 0o644))

			checked, after := CheckTree(root, src)
			require.Positive(t, checked)
			var problems []string
			for _, p := range after {
				if !known[p.Error()] {
					problems = append(problems, p.Error())
				}
			}
			require.Len(t, problems, 1, "%v", problems)
			for _, want := range tt.wantErr {
				assert.Contains(t, problems[0], want)
			}
		})
	}
}
