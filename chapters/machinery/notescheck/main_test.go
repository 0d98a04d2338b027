package notescheck

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// TestMain runs the checks from the notes folder, where the notes are prose only: the checks name
// the notes as they link each other ("03-run.md", "zh/03-run.md", "../chapters/…").
func TestMain(m *testing.M) {
	if err := os.Chdir(repo.Path("notes")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
