package notescheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeKubernetes is a Source reading a kubernetes of a few files, written into a temporary
// directory as if it were the module at version: no download.
func fakeKubernetes(t *testing.T, pinned, version string, files map[string]string) *Source {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	src := NewSource(pinned, version)
	src.dirs["k8s.io/kubernetes@"+version] = dir
	return src
}

// The pinned release's package, and the next release's: Run moved down two lines, Stop moved to
// stop.go, the statement in Run moved with it, Gone is gone, and old.go with Old in it.
const (
	runOld = "package kubelet\n\nfunc Run() {\n\tstart()\n}\n\nfunc Stop() {\n}\n\nfunc Gone() {\n}\n"
	runNew = "package kubelet\n\n// Run runs.\n// It returns when done.\nfunc Run() {\n\tprepare()\n\tstart()\n}\n"
	stop   = "package kubelet\n\nimport \"fmt\"\n\nfunc Stop() {\n\tfmt.Println()\n}\n"
)

func TestLocateSaysWhereACitationPointsNow(t *testing.T) {
	old := fakeKubernetes(t, "v1.0.0", "v1.0.0", map[string]string{"pkg/kubelet/run.go": runOld, "pkg/kubelet/old.go": "package kubelet\n\nfunc Old() {}\n"})
	next := fakeKubernetes(t, "v1.0.0", "v1.1.0", map[string]string{"pkg/kubelet/run.go": runNew, "pkg/kubelet/stop.go": stop})
	const link = "https://github.com/kubernetes/kubernetes/blob/v1.0.0/pkg/kubelet/"
	tests := []struct {
		name, text string
		want       string // the citation at v1.1.0; empty: none
		wantErr    string
	}{
		{"a func moved down", "[`func Run()`](" + link + "run.go#L3-L5)", "pkg/kubelet/run.go#L5-L8 (func Run())", ""},
		{"a statement moved with it", "[`start()`](" + link + "run.go#L4)", "pkg/kubelet/run.go#L7 (start())", ""},
		{"a func moved to another file", "[`func Stop()`](" + link + "run.go#L7-L8)", "pkg/kubelet/stop.go#L5-L7 (func Stop())", ""},
		{"a func gone", "[`func Gone()`](" + link + "run.go#L10-L11)", "", `"func Gone()" is neither in pkg/kubelet/run.go nor in another file of pkg/kubelet in kubernetes v1.1.0`},
		{"a file gone", "[`func Old() {}`](" + link + "old.go#L3)", "", `"func Old() {}" is neither in pkg/kubelet/old.go nor in another file`},
		{"a file link to a file gone", "[old.go](" + link + "old.go)", "", "pkg/kubelet/old.go is not in kubernetes v1.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cites, errs := Extract("notes/n.md", []byte(tt.text))
			require.Empty(t, errs)
			require.Len(t, cites, 1)
			require.NoError(t, old.Check(cites[0]), "the citation holds at the pinned release")
			require.Error(t, next.Check(cites[0]), "and is broken at the next")

			now, err := next.Locate(cites[0])
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, now.String())
			assert.NoError(t, next.Check(now), "what Locate returns holds")
		})
	}
}
