package rehearsal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two rehearsals in one checkout: the second is refused, saying why, until the first lets go.
func TestLockAnswers(t *testing.T) {
	workshop := t.TempDir()
	unlock, err := lockAnswers(workshop)
	require.NoError(t, err, "the first rehearsal")
	_, err = lockAnswers(workshop)
	require.Error(t, err, "a second rehearsal while the first runs")
	assert.ErrorContains(t, err, "another rehearsal is using "+workshop+"/answers")
	unlock()
	unlockAgain, err := lockAnswers(workshop)
	require.NoError(t, err, "after the first let go")
	unlockAgain()
	_, err = lockAnswers(workshop + "/missing")
	assert.Error(t, err, "no workshop directory")
}
