package journeynote

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

var (
	notePath   = repo.Path("notes", "07-syncloop.md")
	readmePath = repo.Path("chapters", "07-syncloop", "README.md")
)

// sample is the output the chapter README shows for `go run ./chapters/07-syncloop`: the first
// text block after the command, folded or not.
func sample(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	_, after, found := strings.Cut(string(data), "```sh\ngo run ./chapters/07-syncloop\n```\n")
	require.True(t, found, "%s runs the chapter", readmePath)
	m := regexp.MustCompile("(?s)^.*?```text[^\n]*\n(.*?)```\n").FindStringSubmatch(after)
	require.NotNil(t, m, "%s shows the chapter's output after its command", readmePath)
	return m[1]
}

func noteSteps(t *testing.T) []Step {
	t.Helper()
	steps, err := NoteSteps(notePath)
	require.NoError(t, err)
	return steps
}

// The README's sample is the run the note's table was written from: it follows the note, and
// each step the note lists has the number the note gives it.
func TestReadmeSampleIsTheNotesRun(t *testing.T) {
	printed, err := Read(sample(t))
	require.NoError(t, err)
	steps := noteSteps(t)
	matched, err := Follow(printed, steps)
	require.NoError(t, err)
	for i, s := range steps {
		assert.Equal(t, s.Number, matched[i].Number, "the note's step %d is step %d of the README's run: %s", s.Number, matched[i].Number, s.Row)
	}
}

// block returns the lines of the printed step n, from its heading to the blank line after it.
func block(t *testing.T, output string, n int) string {
	t.Helper()
	m := regexp.MustCompile(fmt.Sprintf(`(?m)^ *%d  .*\n(?:       .*\n)*\n`, n)).FindString(output)
	require.NotEmpty(t, m, "step %d in the output", n)
	return m
}

// renumber adds by to every step's number, and to the steps it refers to.
func renumber(output string, by int) string {
	return regexp.MustCompile(`(?m)^ *\d+  |same stack as step \d+`).ReplaceAllStringFunc(output, func(m string) string {
		digits := regexp.MustCompile(`\d+`)
		n, _ := strconv.Atoi(digits.FindString(m))
		return digits.ReplaceAllString(m, strconv.Itoa(n+by))
	})
}

// A run follows the note when every step of the table is there, in order; the steps between
// them, their numbers and how many there are may differ. Each case changes the README's run
// as another run could, or as a broken kubelet or chapter would.
func TestFollows(t *testing.T) {
	run := sample(t)
	steps := noteSteps(t)
	extra := " 99  kubelet.(*Kubelet).Run wakes kubelet.(*podWorkers).UpdatePod.func1, which waited [chan receive] in kubelet.(*podWorkers).podWorkerLoop\n" +
		"       at pkg/kubelet/pod_workers.go#L1247 (for range podUpdates {)\n" +
		"       kubelet.(*podWorkers).UpdatePod  pkg/kubelet/pod_workers.go#L996 (case podUpdates <- struct{}{}:)\n\n"
	tests := []struct {
		name    string
		output  string
		wantErr string
	}{
		{"the README's run", run, ""},
		{"more steps between the note's", strings.Replace(run, block(t, run, 13), extra+block(t, run, 13)+extra, 1), ""},
		{"steps the note does not list left out", strings.Replace(strings.Replace(run, block(t, run, 5), "", 1), block(t, run, 6), "", 1), ""},
		{"other numbers", renumber(run, 100), ""},
		{"a step of the note missing", strings.Replace(run, block(t, run, 31), "", 1),
			"the note's step 31 is not in the output after printed step 30 (which matched the note's step 30)"},
		{"two steps of the note in the wrong order", strings.Replace(strings.Replace(run, block(t, run, 16), "SIXTEEN", 1), block(t, run, 17), block(t, run, 17)+block(t, run, 16), 1),
			"the note's step 17 is not in the output"},
		{"another goroutine", strings.Replace(run, " 12  kubelet.(*Kubelet).Run creates", " 12  kubelet.(*Kubelet).syncLoop creates", 1),
			"the note's step 12 is not in the output after printed step 11"},
		{"the note's function not on the stack", strings.Replace(run, block(t, run, 12), strings.ReplaceAll(block(t, run, 12), "HandlePodAdditions  ", "HandlePodUpdates    "), 1),
			"the note's step 12 is not in the output"},
		{"a stack referred to, not printed", strings.Replace(run, "(the same stack as step 27)", "(the same stack as step 26)", 1),
			"the note's step 41 is not in the output"},
		{"in another phase", strings.Replace(run, "== edit: ", "== add: ", 1), "the note's step 27 is not in the output"},
		{"no steps at all", "The real kubelet ran.\n", "no step in the output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Follows(tt.output, steps)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}
