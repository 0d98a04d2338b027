package notescheck

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/modproxy"
)

// A kubernetes whose go line asks for a newer Go than this machine's (v1.38 asks for Go 1.27) is
// read all the same: the go command downloads and extracts it before it refuses to build with it.
func TestSourceReadsAReleaseForANewerGo(t *testing.T) {
	proxy := t.TempDir()
	modproxy.Publish(t, proxy, "k8s.io/kubernetes", "v1.99.0", map[string]string{
		"go.mod":             "module k8s.io/kubernetes\n\ngo 1.999.0\n",
		"pkg/kubelet/run.go": runOld,
	})
	modproxy.Use(t, proxy)
	t.Chdir(t.TempDir()) // outside any module, as in a checkout's notes/ it would be inside one

	cites, errs := Extract("notes/n.md", []byte("[`func Run()`](https://github.com/kubernetes/kubernetes/blob/v1.99.0/pkg/kubelet/run.go#L3-L5)"))
	require.Empty(t, errs)
	require.Len(t, cites, 1)
	require.NoError(t, NewSource("v1.99.0", "v1.99.0").Check(cites[0]))
}
