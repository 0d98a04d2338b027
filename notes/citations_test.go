package notes

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

// TestCheckerFindsBrokenCitations proves the checker fails, naming file and line, on each kind
// of broken citation.
func TestCheckerFindsBrokenCitations(t *testing.T) {
	src := NewSource(pinned(t), pinned(t))
	const link = "https://github.com/kubernetes/kubernetes/blob/" + "v1.37.2"
	tests := []struct {
		name, file, text string
		wantErr          string // empty: valid
	}{
		{"valid link", "n.md", "see [`func RunKubelet`](" + link + "/cmd/kubelet/app/server.go#L1285-L1339)", ""},
		{"valid staging link", "n.md", "[`func Run(cmd *cobra.Command) int`](" + link + "/staging/src/k8s.io/component-base/cli/run.go#L43)", ""},
		{"valid file link", "n.md", "[server.go](" + link + "/cmd/kubelet/app/server.go)", ""},
		{"valid short form over two comment lines", "x.go", "// see cmd/kubelet/app/server.go#L1285-L1339\n// (func RunKubelet) for more", ""},
		{"symbol moved", "n.md", "\n\n[`func RunKubelet`](" + link + "/cmd/kubelet/app/server.go#L1341-L1355)", "n.md:3: cmd/kubelet/app/server.go#L1341-L1355 (func RunKubelet): \"func RunKubelet\" is not in those lines in v1.37.2; it is at line 1285 now"},
		{"symbol nowhere", "n.md", "[`func NoSuchThing`](" + link + "/cmd/kubelet/app/server.go#L1-L2)", "nor anywhere in the file"},
		{"lines past the end", "n.md", "[`x`](" + link + "/cmd/kubelet/kubelet.go#L100-L120)", "lines out of range"},
		{"no such file", "n.md", "[`x`](" + link + "/cmd/kubelet/nope.go#L1)", "no such file in kubernetes"},
		{"not a code span", "n.md", "[RunKubelet](" + link + "/cmd/kubelet/app/server.go#L1285)", "must be one code span"},
		{"another tag", "n.md", "[`func RunKubelet`](https://github.com/kubernetes/kubernetes/blob/v1.36.0/cmd/kubelet/app/server.go#L1285)", "cites v1.36.0, not the pinned"},
		{"master", "n.md", "[`func RunKubelet`](https://github.com/kubernetes/kubernetes/blob/master/cmd/kubelet/app/server.go#L1285)", "which moves; pin a release tag"},
		{"short form, wrong symbol", "x.go", "// cmd/kubelet/app/server.go#L1285 (func startKubelet)", "x.go:1: cmd/kubelet/app/server.go#L1285 (func startKubelet)"},
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
			require.NotEmpty(t, errs)
			assert.Contains(t, errs[0].Error(), tt.wantErr)
		})
	}
}

// TestBrokenCopyFails breaks one citation in a copy of the real notes and chapters and expects
// exactly that one to be reported.
func TestBrokenCopyFails(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"notes", "chapters"} {
		require.NoError(t, os.CopyFS(filepath.Join(root, dir), os.DirFS(filepath.Join("..", dir))))
	}
	note := filepath.Join(root, "notes", "04-runkubelet.md")
	data, err := os.ReadFile(note)
	require.NoError(t, err)
	const good = "cmd/kubelet/app/server.go#L1278-L1339)"
	require.Contains(t, string(data), good, "the note cites RunKubelet")
	broken := strings.Replace(string(data), good, "cmd/kubelet/app/server.go#L1300-L1339)", 1)
	require.NoError(t, os.WriteFile(note, []byte(broken), 0o644))

	src := NewSource(pinned(t), pinned(t))
	checked, problems := CheckTree(root, src)
	require.Positive(t, checked)
	require.Len(t, problems, 1, "%v", problems)
	assert.Contains(t, problems[0].Error(), "notes/04-runkubelet.md:")
	assert.Contains(t, problems[0].Error(), "#L1300-L1339 (func RunKubelet)")
	assert.Contains(t, problems[0].Error(), "it is at line 1285 now")
}
