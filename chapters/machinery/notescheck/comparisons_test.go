package notescheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A comparison note may cite the other release's tag, checked against that release; any other
// file citing it, or a comparison note citing a third tag, is refused.
func TestComparisonNotesCiteTheOtherTag(t *testing.T) {
	var note string
	for file, tag := range Comparisons {
		if tag == "v1.38.0-beta.0" {
			note = file
		}
	}
	require.NotEmpty(t, note, "a comparison note with v1.38.0-beta.0")
	src := fakeKubernetes(t, "v1.0.0", "v1.0.0", map[string]string{"pkg/kubelet/run.go": runOld})
	src.compared = map[string]*Source{
		"v1.38.0-beta.0": fakeKubernetes(t, "v1.38.0-beta.0", "v1.38.0-beta.0", map[string]string{"pkg/kubelet/run.go": runNew}),
	}

	const beta = "https://github.com/kubernetes/kubernetes/blob/v1.38.0-beta.0/pkg/kubelet/run.go"
	const pinned = "https://github.com/kubernetes/kubernetes/blob/v1.0.0/pkg/kubelet/run.go"
	tests := []struct {
		name, file, text, wantErr string
	}{
		{"the comparison note, the other tag", note, "[`func Run()`](" + beta + "#L5-L8)", ""},
		{"the comparison note, the pinned tag", note, "[`func Run()`](" + pinned + "#L3-L5)", ""},
		{"the comparison note, checked against the other tag", note, "[`func Run()`](" + beta + "#L3-L5)", "func Run is #L5-L8 in v1.38.0-beta.0"},
		{"the comparison note, a third tag", note, "[`func Run()`](https://github.com/kubernetes/kubernetes/blob/v1.36.0/pkg/kubelet/run.go#L3-L5)", "cites v1.36.0, not the pinned v1.0.0"},
		{"another note, the other tag", "notes/04-runkubelet.md", "[`func Run()`](" + beta + "#L5-L8)", "cites v1.38.0-beta.0, not the pinned v1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cites, errs := Extract(tt.file, []byte(tt.text))
			require.Empty(t, errs, "a pre-release tag is a tag")
			require.Len(t, cites, 1)
			err := src.Check(cites[0])
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
