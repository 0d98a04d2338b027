package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// `lab trace save FILE` and `lab trace check FILE`: make test (.ci/timed) saves this machine's
// Trace before its first test stage and checks after its stages that nothing was added —
// a rule in the host's netfilter, a file in /etc, a cgroup, what a Docker engine, containerd, a
// kubelet or minikube makes at its default places. On a machine that never ran the suite the
// first stage to change it fails, naming what it left.
func newTraceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Save this machine's state that no test may change (netfilter, /etc, cgroups, the engines' default places), or check it",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "save FILE",
		Short: "Write this machine's trace to FILE (refusing an existing one)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return SaveTrace(args[0], TakeTrace())
		},
	}, &cobra.Command{
		Use:   "check FILE",
		Short: "Compare this machine with the trace in FILE: fail naming everything added since",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			before, err := LoadTrace(args[0])
			if err != nil {
				return err
			}
			return CheckTrace(cmd.OutOrStdout(), before, TakeTrace())
		},
	})
	return cmd
}

// SaveTrace writes t to a new file name.
func SaveTrace(name string, t Trace) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("save the trace: %w", err)
	}
	err = json.NewEncoder(f).Encode(t)
	return errors.Join(err, f.Close())
}

// LoadTrace reads a trace SaveTrace wrote.
func LoadTrace(name string) (Trace, error) {
	var t Trace
	data, err := os.ReadFile(name)
	if err != nil {
		return t, fmt.Errorf("read the trace: %w", err)
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("read the trace %s: %w", name, err)
	}
	return t, nil
}

// CheckTrace writes what after has that before had not, one line each, and fails when there is
// any.
func CheckTrace(w io.Writer, before, after Trace) error {
	left := Leftovers(before, after)
	if len(left) == 0 {
		return nil
	}
	fmt.Fprintf(w, "left on this machine:\n  %s\n", strings.Join(left, "\n  "))
	return fmt.Errorf("%d changes to this machine's netfilter, /etc, cgroups or the engines' default places", len(left))
}
