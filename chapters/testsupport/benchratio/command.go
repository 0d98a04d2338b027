package benchratio

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

type summaryOptions struct {
	goals string
}

// NewSummaryCommand builds benchsummary's command: the ratios of go test -bench output (a file,
// or standard input) against the goals of a note.
func NewSummaryCommand() *cobra.Command {
	o := &summaryOptions{}
	cmd := &cobra.Command{
		Use:   "benchsummary [FILE]",
		Short: "Summarize the ratios of side-by-side benchmarks against the goals of notes/measurements.md",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := cmd.InOrStdin()
			if len(args) == 1 {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			return o.run(in, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.goals, "goals", "notes/measurements.md", "the note whose lines state each benchmark's goal (\"goal ≤ 1.1×\")")
	return cmd
}

func (o *summaryOptions) run(in io.Reader, out io.Writer) error {
	note, err := os.ReadFile(o.goals)
	if err != nil {
		return err
	}
	goals, err := Goals(string(note))
	if err != nil {
		return fmt.Errorf("%s: %w", o.goals, err)
	}
	ratios, err := Parse(in)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nSide by side: the ratios the benchmarks reported (their x- metrics), against the goals of %s (- where it sets none).\n", o.goals)
	if len(ratios) == 0 {
		fmt.Fprintln(out, "No benchmark reported a ratio in this run.")
	}
	missed, err := Summarize(out, ratios, goals)
	if err != nil {
		return err
	}
	switch missed {
	case 0:
	case 1:
		fmt.Fprintln(out, "1 ratio missed its goal (one run on a busy machine can be 10–30 % off: see the note before believing it).")
	default:
		fmt.Fprintf(out, "%d ratios missed their goal (one run on a busy machine can be 10–30 %% off: see the note before believing it).\n", missed)
	}
	return nil
}
