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

// describe prints the anatomy of the real command.
func describe(ctx context.Context, out io.Writer) error {
	fmt.Fprint(out, `cmd/kubelet/kubelet.go, func main, is three lines:

    command := app.NewKubeletCommand(context.Background())
    code := cli.Run(command)
    os.Exit(code)

`)
	// 1. The command itself, as NewKubeletCommand builds it.
	kubelet := app.NewKubeletCommand(ctx)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "1. app.NewKubeletCommand(ctx) builds a cobra command:")
	fmt.Fprintf(tw, "     Use\t%s\t\n", kubelet.Use)
	fmt.Fprintf(tw, "     DisableFlagParsing\t%t\tcobra hands every argument to RunE unparsed\n", kubelet.DisableFlagParsing)
	fmt.Fprintf(tw, "     SilenceUsage\t%t\tno usage text after a runtime error\n", kubelet.SilenceUsage)
	fmt.Fprintf(tw, "     flags cobra knows\t%d\tthe kubelet keeps its flags away from cobra\n", countFlags(kubelet.Flags()))
	if err := tw.Flush(); err != nil {
		return err
	}

	// 2. The flags RunE parses itself, set by set.
	total, deprecated := 1, 0 // --help is added last, on its own
	type row struct {
		name, what    string
		n, deprecated int
		examples      []string
	}
	var rows []row
	for _, set := range flagSets {
		fs := pflag.NewFlagSet(set.name, pflag.ContinueOnError)
		if err := set.add(fs); err != nil {
			return err
		}
		r := row{name: set.name, what: set.what}
		var names []string
		fs.VisitAll(func(f *pflag.Flag) {
			names = append(names, "--"+f.Name)
			if f.Deprecated != "" {
				r.deprecated++
			}
		})
		r.n, r.examples = len(names), names[:min(3, len(names))]
		total += r.n
		deprecated += r.deprecated
		rows = append(rows, r)
	}
	fmt.Fprintf(out, "\n2. RunE parses the arguments into its own flag set: %d flags, %d of them deprecated.\n", total, deprecated)
	fmt.Fprintf(tw, "     set\tflags\tdeprecated\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "     %s\t%d\t%d\t%s (%s, …)\n", r.name, r.n, r.deprecated, r.what, strings.Join(r.examples, ", "))
	}
	fmt.Fprintf(tw, "     --help\t1\t0\tadded last, by hand\n")
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprint(out, `
   Deprecated does not mean gone: almost every KubeletConfiguration flag still works, but the
   supported place for those settings is the --config file.

3. Why parse by hand: once --config is loaded, RunE parses the same arguments a second time
   over the loaded file, so that a flag on the command line beats the file (kubernetes#56171).
   Chapter 02 shows it on a real configuration file.
`)

	// 4. What cli.Run adds: run the real command through it, with --help only.
	kubelet = app.NewKubeletCommand(ctx)
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

	fmt.Fprint(out, `
5. Run the real command yourself, in its two safe modes:
     go run ./chapters/01-entrypoint kubelet --help
     go run ./chapters/01-entrypoint kubelet --version
`)
	return nil
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
