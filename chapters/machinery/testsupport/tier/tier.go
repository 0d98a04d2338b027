// Package tier decides what a test does when the machine cannot give it what it needs (a
// private network namespace, root, runc, …): elsewhere it skips and says why; under CI=true,
// where the continuous integration machine promises every tier, it fails and says why. No test
// turns "could not run" into a pass.
package tier

import (
	"fmt"
	"os"
	"testing"
)

// CI says whether the tests run under continuous integration (CI=true, as GitHub Actions and
// most CI systems set it, and as .ci/run runs).
func CI() bool { return os.Getenv("CI") == "true" }

// Unavailable stops the test: it fails under CI, and skips elsewhere, naming the tier and why it
// cannot run.
func Unavailable(tb testing.TB, tier string, why error) {
	tb.Helper()
	msg := fmt.Sprintf("the %s tier cannot run here: %v", tier, why)
	if CI() {
		tb.Fatalf("%s (CI=true: CI promises this tier)", msg)
		return
	}
	tb.Skip(msg)
}

// Require stops the test as Unavailable does when why is not nil.
func Require(tb testing.TB, tier string, why error) {
	tb.Helper()
	if why != nil {
		Unavailable(tb, tier, why)
	}
}

// Long stops a test that -short leaves out (a build of minutes, a real kubelet for seconds): it
// skips with why, or fails under CI=true, where -short would silently drop what CI promises.
func Long(tb testing.TB, why string) {
	tb.Helper()
	long(tb, testing.Short(), why)
}

func long(tb testing.TB, short bool, why string) {
	tb.Helper()
	if !short {
		return
	}
	if CI() {
		tb.Fatalf("-short leaves out %s, which CI checks: run CI without -short", why)
		return
	}
	tb.Skipf("-short: %s", why)
}
