package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/02-config/configload"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"sigs.k8s.io/yaml"
)

// configOptions are the chapter's flags; the arguments after "--" are kubelet flags.
type configOptions struct {
	config      string
	kubeletArgs []string
	out         io.Writer
	warnings    io.Writer
}

// interesting are fields worth seeing even when neither the file nor a flag sets them: the
// ones whose default differs between a config file and bare flags.
var interesting = []string{
	"readOnlyPort",
	"authentication.anonymous.enabled",
	"authentication.webhook.enabled",
	"authorization.mode",
}

// NewConfigCommand builds the chapter's command.
func NewConfigCommand(ctx context.Context) *cobra.Command {
	o := &configOptions{}
	cmd := &cobra.Command{
		Use:   "02-config [--config FILE] [-- KUBELET-FLAGS...]",
		Short: "Load a KubeletConfiguration file the way the kubelet does, flags over it, and validate it",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.out, o.warnings = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				o.kubeletArgs = args[dash:]
				args = args[:dash]
			}
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments %q: kubelet flags go after --", args)
			}
			return o.run(ctx)
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "examples/kubelet-config.yaml", "the kubelet configuration file (the kubelet's --config)")
	return cmd
}

// maxConfigBytes bounds the file: a kubelet configuration is a few kilobytes.
const maxConfigBytes = 1 << 20

// validate checks the flag before anything is loaded: the kubelet's loader reads "" as the
// working directory and says only that it is a directory. It reads the whole file at once
// (os.ReadFile), so /dev/zero would grow until the process is killed, and a FIFO would wait
// for a writer for ever: a regular file of at most maxConfigBytes, then. A file that does not
// exist is left to the loader, whose words the kubelet would print.
func (o *configOptions) validate() error {
	if o.config == "" {
		return errors.New(`--config "": name a kubelet configuration file (chapter 03 runs on flag defaults alone)`)
	}
	info, err := os.Stat(o.config)
	switch {
	case err != nil:
		return nil
	case info.IsDir():
		return fmt.Errorf("--config %s: a directory; name a kubelet configuration file", o.config)
	case !info.Mode().IsRegular():
		return fmt.Errorf("--config %s: not a regular file (%s); name a kubelet configuration file", o.config, info.Mode().Type())
	case info.Size() > maxConfigBytes:
		return fmt.Errorf("--config %s: %d bytes, more than a kubelet configuration file holds (at most %d)", o.config, info.Size(), maxConfigBytes)
	}
	return nil
}

func (o *configOptions) run(ctx context.Context) error {
	if err := o.validate(); err != nil {
		return err
	}
	// 1. The file, through the kubelet's loader.
	fromFile, err := configload.LoadConfigFile(ctx, o.config)
	if err != nil {
		return fmt.Errorf("--config %s: %w", o.config, err)
	}
	fmt.Fprintf(o.out, "Loaded %s with the kubelet's loader: decoded, defaulted (v1beta1), converted, paths resolved.\n", o.config)

	// 2. The same file with the command line parsed over it.
	effective, err := configload.LoadConfigFile(ctx, o.config)
	if err != nil {
		return err
	}
	if err := configload.ApplyFlags(effective, o.kubeletArgs, o.warnings); err != nil {
		return fmt.Errorf("kubelet flags: %w", err)
	}
	if len(o.kubeletArgs) > 0 {
		fmt.Fprintf(o.out, "Flags parsed over it, as the kubelet does after loading --config: %s\n", strings.Join(o.kubeletArgs, " "))
	}

	// 3. What a kubelet started with the same flags but no --config would have.
	bare, err := configload.FlagDefaults(o.kubeletArgs)
	if err != nil {
		return err
	}
	if err := o.printTable(fromFile, effective, bare); err != nil {
		return err
	}

	// 4. The kubelet's validation, which decides whether the kubelet starts at all.
	configErrs, hostErrs := configload.Validate(effective)
	if len(configErrs) == 0 {
		fmt.Fprintln(o.out, "\nValidation (ValidateKubeletConfiguration): the configuration is valid.")
	} else {
		fmt.Fprintf(o.out, "\nValidation (ValidateKubeletConfiguration) finds %d errors; the kubelet would not start:\n", len(configErrs))
		for _, e := range configErrs {
			fmt.Fprintf(o.out, "  - %v\n", e)
		}
	}
	// The same function checks the host too. Its answer depends on the machine, not the file.
	for _, e := range hostErrs {
		fmt.Fprintf(o.out, "On this host it also says: %v\n"+
			"  (this machine uses cgroup v1; set failCgroupV1: false, or --fail-cgroupv1=false, to run a kubelet on it)\n", e)
	}
	if len(configErrs) > 0 {
		return errors.New(o.config + " is not a valid kubelet configuration")
	}
	return nil
}

// printTable shows the fields the file sets, those the flags change and a few whose defaults
// are worth knowing, with where each effective value comes from.
func (o *configOptions) printTable(fromFile, effective, bare *kubeletconfig.KubeletConfiguration) error {
	inFile, err := fileKeys(o.config)
	if err != nil {
		return err
	}
	maps := make([]map[string]string, 3)
	for i, kc := range []*kubeletconfig.KubeletConfiguration{fromFile, effective, bare} {
		m, err := configload.AsJSON(kc)
		if err != nil {
			return err
		}
		maps[i] = flatten(m)
	}
	file, eff, noConfig := maps[0], maps[1], maps[2]

	rows := map[string]bool{}
	for _, k := range interesting {
		rows[k] = true
	}
	for k := range inFile {
		rows[k] = true
	}
	for k := range eff {
		if eff[k] != file[k] || (strings.HasPrefix(k, "evictionHard.") && noConfig[k] != eff[k]) {
			rows[k] = true
		}
	}
	for k := range noConfig {
		if strings.HasPrefix(k, "evictionHard.") {
			rows[k] = true
		}
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	fmt.Fprintln(o.out)
	tw := printers.GetNewTabWriter(o.out)
	fmt.Fprintln(tw, "FIELD\tEFFECTIVE\tFROM\tWITHOUT --config")
	for _, k := range keys {
		from := "default"
		switch {
		case eff[k] != file[k]:
			from = "flag"
		case inFile[k]:
			from = "file"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k, display(eff[k]), from, display(noConfig[k]))
	}
	return tw.Flush()
}

// fileKeys lists the leaf paths the file itself sets.
func fileKeys(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	keys := map[string]bool{}
	for k := range flatten(m) {
		keys[k] = true
	}
	return keys, nil
}

// flatten turns nested objects into dotted leaf paths.
func flatten(m map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if obj, ok := v.(map[string]any); ok && len(obj) > 0 {
			for k, child := range obj {
				walk(strings.TrimPrefix(prefix+"."+k, "."), child)
			}
			return
		}
		out[prefix] = configload.Field(map[string]any{"v": v}, []string{"v"})
	}
	walk("", m)
	return out
}

// display shows "-" for unset values and paths under the working directory relative to it.
func display(v string) string {
	if v == "" {
		return "-"
	}
	if wd, err := os.Getwd(); err == nil && filepath.IsAbs(v) {
		if rel, err := filepath.Rel(wd, v); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return v
}
