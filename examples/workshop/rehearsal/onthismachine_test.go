package rehearsal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/workshop/checks"
)

// onThisMachine are the exercises that need no cluster and run the kubelet on the attendee's own
// machine (exercise 16: the real kubelet in Delve). TestRehearseOnThisMachine rehearses them
// outside the lab, so that they are rehearsed where the lab cannot run too; TestRehearseWorkshop
// leaves them out.
var onThisMachine = map[int]bool{16: true}

// TestRehearseOnThisMachine runs those exercises as TestRehearseWorkshop runs the others: the
// answer templates copied as the workshop's README copies them, then for each exercise its checker
// (FAIL, for the exercise's own reason), its README's commands as written — a Delve session typed
// into a terminal, line by line, at Delve's prompt — the answers read from what they printed, and
// the README's own `make check EX=N` (PASS).
func TestRehearseOnThisMachine(t *testing.T) {
	absRoot, err := filepath.Abs(root)
	require.NoError(t, err)
	var missing []string
	if runtime.GOOS != "linux" {
		missing = append(missing, "Linux (chapter 04's kubelet)")
	}
	for _, tool := range []string{"bash", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" on PATH")
		}
	}
	if len(missing) > 0 {
		tier.Unavailable(t, "rehearsal", fmt.Errorf("it needs %s", strings.Join(missing, ", ")))
	}
	tier.Long(t, "the rehearsal of exercise 16 builds chapter 04's kubelet and runs it in Delve")
	keepAnswers(t, absRoot)
	r := newRehearsal(t, absRoot)
	// This machine's module proxy, not the lab's "off": make dlv builds Delve's own module.
	for i, kv := range r.env {
		if strings.HasPrefix(kv, "GOPROXY=") {
			r.env[i] = "GOPROXY=" + goEnv(t, "GOPROXY")
		}
	}
	readme, err := ReadBlocks(r.root, workshopReadme)
	require.NoError(t, err)
	copied := false
	for _, b := range readme {
		for _, c := range b.Commands {
			if strings.Contains(c.Text, "answers-template") {
				r.run(c, fmt.Sprintf("%s:%d", b.File, c.Line), commandTimeout)
				copied = true
			}
		}
	}
	require.True(t, copied, "the workshop's README copies the answer templates")

	for _, e := range checks.Exercises {
		if !onThisMachine[e.Number] {
			continue
		}
		t.Run(fmt.Sprintf("exercise %d", e.Number), func(t *testing.T) {
			r.t = t
			r.ran = nil
			before := r.check(e)
			require.False(t, before.Passed(), "exercise %d passes before its commands", e.Number)
			require.Contains(t, beforeReason, e.Number, "what exercise %d's checker says before its commands", e.Number)
			assert.Contains(t, strings.Join(before.Missing, "\n"), beforeReason[e.Number], "why exercise %d fails before its commands", e.Number)
			t.Logf("exercise %d before its commands: FAIL, %s", e.Number, before.Missing[0])
			blocks, err := ReadBlocks(r.root, exerciseReadme(e))
			require.NoError(t, err)
			begin := time.Now()
			checked := false
			r.blocks(blocks, buildTimeout, func(c Command, ran bool) {
				if c.Text != fmt.Sprintf("make check EX=%d", e.Number) || checked {
					return
				}
				if ran {
					// The README's own `make check EX=N` said PASS (its sample) and exited 0 (run
					// fails it otherwise): the checker, in a process of its own, run once — it builds
					// and runs the kubelet in Delve, 15 to 20 seconds, which make test need not spend twice.
					took := time.Since(begin)
					checked = true
					for _, row := range timings(t) {
						if row.number == e.Number {
							t.Logf("exercise %d: FAIL before, PASS after; its commands took %s (INSTRUCTOR.md: %d–%d s)", e.Number, took.Round(100*time.Millisecond), row.low, row.top)
							assert.LessOrEqual(t, took.Seconds(), 3*float64(row.top), "exercise %d took %s", e.Number, took.Round(time.Second))
						}
					}
					return
				}
				files, err := answersFor(e.Number, r.ran)
				require.NoError(t, err, "exercise %d's answers, from its commands' output", e.Number)
				for name, content := range files {
					require.NoError(t, os.WriteFile(filepath.Join(r.root, "examples", "workshop", "answers", name), []byte(content), 0o644))
					t.Logf("answers/%s:\n%s", name, content)
				}
			})
			require.True(t, checked, "exercise %d's README runs `make check EX=%d`", e.Number, e.Number)
		})
		r.t = t
	}
}

// goEnv is a go env variable of this machine.
func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
