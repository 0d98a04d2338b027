package repo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMakeEnv(t *testing.T) {
	t.Setenv("MAKEFLAGS", "-Orecurse -j2 --jobserver-auth=3,4 -- TEST_FLAGS=-v")
	t.Setenv("MAKELEVEL", "2")
	t.Setenv("KW_KEPT", "yes")
	env := MakeEnv()
	assert.Contains(t, env, "KW_KEPT=yes")
	for _, kv := range env {
		assert.NotRegexp(t, `^(MAKEFLAGS|MAKELEVEL)=`, kv)
	}
}
