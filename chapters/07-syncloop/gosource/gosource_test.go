package gosource

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelectCaseAndLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loop.go")
	require.NoError(t, os.WriteFile(path, []byte(`package loop

func iterate(in <-chan int, tick <-chan struct{}) {
	select {
	case v, ok := <-in:
		switch v {
		case 1, 2:
			_ = ok
		}
	case <-tick:
	}
}
`), 0o600))
	for _, tc := range []struct {
		line       int
		want, text string
	}{
		{8, "case v, ok := <-in → case 1, 2", "\t\t\t_ = ok"},
		{6, "case v, ok := <-in", "\t\tswitch v {"},
		{10, "case <-tick", "\tcase <-tick:"},
		{4, "", "\tselect {"},
		{99, "", ""},
	} {
		assert.Equal(t, tc.want, SelectCase(path, tc.line), "line %d", tc.line)
		assert.Equal(t, tc.text, Line(path, tc.line), "line %d", tc.line)
	}
	gone := filepath.Join(t.TempDir(), "gone.go")
	assert.Equal(t, "", SelectCase(gone, 1), "no source, no case")
	assert.Equal(t, "", Line(gone, 1))
}
