package tier

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// recorder is a testing.TB that records how a test was stopped.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }
func (r *recorder) Skip(a ...any)                  { r.skipped = fmt.Sprint(a...) }
func (r *recorder) Skipf(format string, a ...any)  { r.skipped = fmt.Sprintf(format, a...) }

func TestRequire(t *testing.T) {
	why := errors.New("unshare: operation not permitted")
	tests := []struct {
		name          string
		ci            string
		why           error
		failed, skips bool
	}{
		{"available", "true", nil, false, false},
		{"missing, on a laptop", "", why, false, true},
		{"missing, under CI", "true", why, true, false},
		{"missing, CI=false", "false", why, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			r := &recorder{TB: t}
			Require(r, "private network", tt.why)
			assert.Equal(t, tt.failed, r.failed != "", "failed: %q", r.failed)
			assert.Equal(t, tt.skips, r.skipped != "", "skipped: %q", r.skipped)
			for _, msg := range []string{r.failed, r.skipped} {
				if msg != "" {
					assert.Contains(t, msg, "the private network tier cannot run here: unshare: operation not permitted")
				}
			}
		})
	}
}

func TestLong(t *testing.T) {
	tests := []struct {
		name          string
		short         bool
		ci            string
		failed, skips bool
	}{
		{"without -short it runs", false, "true", false, false},
		{"-short on a laptop skips", true, "", false, true},
		{"-short under CI fails", true, "true", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			r := &recorder{TB: t}
			long(r, tt.short, "a series of edits")
			assert.Equal(t, tt.failed, r.failed != "", "failed: %q", r.failed)
			assert.Equal(t, tt.skips, r.skipped != "", "skipped: %q", r.skipped)
			if tt.failed {
				assert.Equal(t, "-short leaves out a series of edits, which CI checks: run CI without -short", r.failed)
			}
		})
	}
}
