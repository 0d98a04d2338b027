package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
)

// NewEntrypointCommand builds the chapter's command: with no arguments it takes the real
// kubelet command apart; `kubelet ARGS` runs the real command, for safe ARGS only.
func NewEntrypointCommand(ctx context.Context) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "01-entrypoint",
		Short: "Take apart the command that cmd/kubelet/kubelet.go builds and runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return describe(ctx, cmd.OutOrStdout())
		},
	}
	cmd.AddCommand(newKubeletCommand(ctx))
	return cmd
}

// The flag sets NewKubeletCommand fills, in its order (cmd/kubelet/app/server.go#L313-L316
// (kubeletFlags.AddFlags(cleanFlagSet))). Each is rebuilt here with the same functions so that
// its flags can be counted one set at a time.
type flagSet struct {
	name, what string
	add        func(*pflag.FlagSet) error
}

var flagSets = []flagSet{
	{"KubeletFlags.AddFlags", "node-specific flags that have no config-file field",
		func(fs *pflag.FlagSet) error { options.NewKubeletFlags().AddFlags(fs); return nil }},
	{"AddKubeletConfigFlags", "one flag per KubeletConfiguration field that still has one",
		func(fs *pflag.FlagSet) error {
			config, err := options.NewKubeletConfiguration()
			if err != nil {
				return err
			}
			options.AddKubeletConfigFlags(fs, config)
			return nil
		}},
	{"AddGlobalFlags", "flags libraries register, logging flags left out",
		func(fs *pflag.FlagSet) error { options.AddGlobalFlags(fs); return nil }},
}

// describe prints the anatomy of the real command: main's three lines, then what each of them
// builds or adds, section by section.
func describe(ctx context.Context, out io.Writer) error {
	describeMain(out)
	if err := describeCommand(ctx, out); err != nil {
		return err
	}
	if err := describeFlagSets(out); err != nil {
		return err
	}
	describeWhyByHand(out)
	if err := describeCLIRun(ctx, out); err != nil {
		return err
	}
	describeSafeModes(out)
	return nil
}

// describeMain prints main, the three lines the rest takes apart.
func describeMain(out io.Writer) {
	fmt.Fprint(out, `cmd/kubelet/kubelet.go, func main, is three lines:

    command := app.NewKubeletCommand(context.Background())
    code := cli.Run(command)
    os.Exit(code)

`)
}

// describeCommand prints section 1: the command itself, as NewKubeletCommand builds it. Cobra
// parses none of its flags.
func describeCommand(ctx context.Context, out io.Writer) error {
	kubelet := app.NewKubeletCommand(ctx)
	tw := newTable(out)
	fmt.Fprintln(out, "1. app.NewKubeletCommand(ctx) builds a cobra command:")
	fmt.Fprintf(tw, "     Use\t%s\t\n", kubelet.Use)
	fmt.Fprintf(tw, "     DisableFlagParsing\t%t\tcobra hands every argument to RunE unparsed\n", kubelet.DisableFlagParsing)
	fmt.Fprintf(tw, "     SilenceUsage\t%t\tno usage text after a runtime error\n", kubelet.SilenceUsage)
	fmt.Fprintf(tw, "     flags cobra knows\t%d\tthe kubelet keeps its flags away from cobra\n", countFlags(kubelet.Flags()))
	return tw.Flush()
}

// describeFlagSets prints section 2: the flags RunE parses itself, set by set, and how many of
// them are deprecated.
func describeFlagSets(out io.Writer) error {
	counts, err := countFlagSets()
	if err != nil {
		return err
	}
	total, deprecated := 1, 0 // --help is added last, on its own
	for _, c := range counts {
		total += c.n
		deprecated += c.deprecated
	}
	fmt.Fprintf(out, "\n2. RunE parses the arguments into its own flag set: %d flags, %d of them deprecated.\n", total, deprecated)
	tw := newTable(out)
	fmt.Fprintf(tw, "     set\tflags\tdeprecated\t\n")
	for _, c := range counts {
		fmt.Fprintf(tw, "     %s\t%d\t%d\t%s (%s, …)\n", c.name, c.n, c.deprecated, c.what, strings.Join(c.examples, ", "))
	}
	fmt.Fprintf(tw, "     --help\t1\t0\tadded last, by hand\n")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(out, `
   Deprecated does not mean gone: almost every KubeletConfiguration flag still works, but the
   supported place for those settings is the --config file.
`)
	return nil
}

// flagSetCount is one of flagSets, counted.
type flagSetCount struct {
	flagSet
	n, deprecated int
	examples      []string // the first three flags' names
}

// countFlagSets fills each of flagSets into a flag set of its own and counts its flags.
func countFlagSets() ([]flagSetCount, error) {
	var counts []flagSetCount
	for _, set := range flagSets {
		fs := pflag.NewFlagSet(set.name, pflag.ContinueOnError)
		if err := set.add(fs); err != nil {
			return nil, err
		}
		c := flagSetCount{flagSet: set}
		var names []string
		fs.VisitAll(func(f *pflag.Flag) {
			names = append(names, "--"+f.Name)
			if f.Deprecated != "" {
				c.deprecated++
			}
		})
		c.n, c.examples = len(names), names[:min(3, len(names))]
		counts = append(counts, c)
	}
	return counts, nil
}

// describeWhyByHand prints section 3: why RunE parses its flags itself.
func describeWhyByHand(out io.Writer) {
	fmt.Fprint(out, `
3. Why parse by hand: once --config is loaded, RunE parses the same arguments a second time
   over the loaded file, so that a flag on the command line beats the file (kubernetes#56171).
   Chapter 02 shows it on a real configuration file.
`)
}

// describeCLIRun prints section 4: what cli.Run adds around a command, seen on the real command
// after running it through cli.Run with --help only.
func describeCLIRun(ctx context.Context, out io.Writer) error {
	kubelet := app.NewKubeletCommand(ctx)
	var help bytes.Buffer
	kubelet.SetArgs([]string{"--help"})
	kubelet.SetOut(&help)
	if err := cli.RunNoErrOutput(kubelet); err != nil {
		return fmt.Errorf("run the real kubelet command with --help: %w", err)
	}
	var persistent []string
	kubelet.PersistentFlags().VisitAll(func(f *pflag.Flag) { persistent = append(persistent, "--"+f.Name) })
	slices.Sort(persistent)
	usage := ""
	if i := strings.Index(help.String(), "Usage:\n"); i >= 0 {
		usage = strings.SplitN(help.String()[i+len("Usage:\n"):], "\n", 2)[0]
	}
	fmt.Fprintf(out, `
4. cli.Run(command), seen on the real command after running it with --help:
     persistent flags            %s
                                 (cli.Run adds the logging flags; cobra adds pflag's global set,
                                 where --version registered itself)
     PersistentPreRun injected   %t  (it calls logs.InitLogs once flags are parsed)
     errors                      printed by cli.Run, not by cobra (SilenceErrors=%t)
     the help it printed         %d lines; usage line %q
`, strings.Join(persistent, " "), kubelet.PersistentPreRun != nil, kubelet.SilenceErrors,
		strings.Count(help.String(), "\n"), strings.TrimSpace(usage))
	return nil
}

// describeSafeModes prints section 5: how to run the real command where that is safe.
func describeSafeModes(out io.Writer) {
	fmt.Fprint(out, `
5. Run the real command yourself, in its two safe modes:
     go run ./chapters/01-entrypoint kubelet --help
     go run ./chapters/01-entrypoint kubelet --version
`)
}

// newTable is the tabwriter the sections align their rows with.
func newTable(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
}

func countFlags(fs *pflag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*pflag.Flag) { n++ })
	return n
}

// safeArgs are the only argument lists passed to the real kubelet command: both return (help)
// or exit (version) in RunE before anything is started
// (cmd/kubelet/app/server.go#L199-L201 (if help {), cmd/kubelet/app/server.go#L204
// (verflag.PrintAndExitIfRequested())).
var safeArgs = [][]string{{"--help"}, {"-h"}, {"--version"}, {"--version=true"}, {"--version=raw"}}

func newKubeletCommand(ctx context.Context) *cobra.Command {
	return &cobra.Command{
		Use:                "kubelet --help | --version[=raw]",
		Short:              "Run the real kubelet command, in a mode that starts nothing",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.ContainsFunc(safeArgs, func(safe []string) bool { return slices.Equal(safe, args) }) {
				return fmt.Errorf("chapter 01 runs the real kubelet only with --help or --version (got %q): "+
					"anything else would start a node agent on this machine; chapter 04 runs a real kubelet safely", args)
			}
			kubelet := app.NewKubeletCommand(ctx)
			kubelet.SetArgs(args)
			kubelet.SetOut(cmd.OutOrStdout())
			return kubelet.Execute()
		},
	}
}
