package checks

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

// TestReferenceSolutions: each coding exercise's checker fails on the repository's code (the
// exercise not done) and passes with its reference solution in place of the exercise's file —
// given to the checker's own build (Env.attendeeCode), so that nothing of the repository changes.
// No cluster, no root.
func TestReferenceSolutions(t *testing.T) {
	root := repo.Root()
	coding := 0
	for _, e := range Exercises {
		if !e.Coding() {
			continue
		}
		coding++
		t.Run(e.Name, func(t *testing.T) {
			env := Env{Root: root, Answers: t.TempDir()}
			before, err := e.Check(context.Background(), env)
			require.NoError(t, err)
			assert.False(t, before.Passed(), "exercise %d passes before it is solved", e.Number)
			assert.Contains(t, strings.Join(before.Missing, "\n"), "the exercise's test to pass")

			env.attendeeCode, err = SolutionFiles(root, e)
			require.NoError(t, err)
			after, err := e.Check(context.Background(), env)
			require.NoError(t, err)
			assert.True(t, after.Passed(), "exercise %d with its reference solution still misses: %v", e.Number, after.Missing)
		})
	}
	assert.Equal(t, 2, coding, "the coding exercises: 12 and 13")
}
