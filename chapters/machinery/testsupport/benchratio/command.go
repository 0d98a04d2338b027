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
	goals, err := ParseGoals(string(note))
	if err != nil {
		return fmt.Errorf("%s: %w", o.goals, err)
	}
	ratios, err := Parse(in)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nSide by side: each ratio's sides (median ±95%% interval of their runs), the ratio of the medians, and its goal in %s.\n", o.goals)
	if len(ratios) == 0 {
		fmt.Fprintln(out, "No benchmark reported a ratio in this run.")
	}
	tally, err := Summarize(out, ratios, goals)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Goals: %d met, %d missed, %d inconclusive", tally.Met, tally.Missed, tally.Inconclusive)
	if tally.NoGoal > 0 {
		fmt.Fprintf(out, "; %d %s no goal in %s", tally.NoGoal, plural(tally.NoGoal, "ratio has", "ratios have"), o.goals)
	}
	fmt.Fprintln(out, ".")
	if tally.Inconclusive > 0 || tally.Met+tally.Missed == 0 && len(ratios) > 0 {
		fmt.Fprintln(out, "A goal is met or missed only when the runs say so (a U test, p ≤ 0.05, as benchstat's): one run proves nothing on a busy machine; more runs (make bench BENCH_COUNT=10) or a quieter machine decide the inconclusive ones.")
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
