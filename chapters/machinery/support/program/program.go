// Package program runs a chapter's command the way kubectl reports errors: "error: …" on the
// terminal's standard error, exit code 1. It is cli.RunNoErrOutput (component-base: klog's flags
// and logging set up as for the kubelet) plus that one line, for chapters whose klog output
// goes to a log file — where cli.Run's own "command failed" log line would go too, unseen.
package program

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
)

// ErrReported is returned by a command that has printed why it failed already.
var ErrReported = errors.New("the error has been reported")

// Run executes cmd and returns the process's exit code. The error goes to cmd.ErrOrStderr(),
// which a command that moved standard error (kubeletlog.ForProgram) has pointed back at the
// terminal.
func Run(cmd *cobra.Command) int {
	err := cli.RunNoErrOutput(cmd)
	if err == nil {
		return 0
	}
	if !errors.Is(err, ErrReported) {
		fmt.Fprintln(cmd.ErrOrStderr(), "error:", err)
	}
	return 1
}
