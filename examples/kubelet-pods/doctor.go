package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// newDoctorCommand is `kubelet-pods doctor`: the way to each kubelet, checked step by step, one
// line per check, and the fix for the first that fails.
func newDoctorCommand(ctx context.Context, o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor (--node NAME | --all-nodes) [flags]",
		Short: "Check, step by step, why a kubelet cannot be read: discovery, DNS/TCP, TLS, credentials, permissions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out, o.errOut, o.doctor = cmd.OutOrStdout(), cmd.ErrOrStderr(), true
			if err := o.complete(cmd.Flags()); err != nil {
				return err
			}
			return redact(o.runDoctor(ctx))
		},
	}
}

func (o *clientOptions) runDoctor(ctx context.Context) error {
	apiserver, err := o.apiserverConfig()
	if err != nil {
		return err
	}
	client, err := kubeletclient.New(apiserver, o.opts)
	if err != nil {
		return err
	}
	nodes := []string{o.node}
	if o.allNodes {
		list, err := client.Nodes(ctx)
		if err != nil {
			return err
		}
		nodes = nodes[:0]
		for _, n := range list {
			nodes = append(nodes, n.Name)
		}
		sort.Strings(nodes)
	}
	// A JSON array even when there is nothing to check (--all-nodes on a cluster with no nodes):
	// [], as kubectl prints an empty list, not null.
	checks := []agent.Check{}
	for _, n := range nodes {
		checks = append(checks, agent.Doctor(ctx, client, n)...)
	}
	if o.output == "json" {
		enc := json.NewEncoder(o.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(checks); err != nil {
			return err
		}
	} else {
		tw := printers.GetNewTabWriter(o.out)
		fmt.Fprintln(tw, "NODE\tCHECK\tRESULT\tDETAIL")
		for _, ch := range checks {
			// Node names and details quote servers (the apiserver, the kubelet's certificate).
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", kubeletclient.Printable(ch.Node, false), ch.Name, ch.Verdict, kubeletclient.Printable(ch.Detail, false))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	failed := 0
	fixed := map[string]bool{}
	for _, ch := range checks {
		if ch.Verdict != agent.Fail {
			continue
		}
		failed++
		if !fixed[ch.Node] && ch.Fix != "" && o.output != "json" {
			fmt.Fprintf(o.errOut, "fix (%s, %s): %s\n", kubeletclient.Printable(ch.Node, false), ch.Name, kubeletclient.Printable(ch.Fix, false))
			fixed[ch.Node] = true
		}
	}
	if failed > 0 {
		return errors.New(fmt.Sprint(failed, " checks failed"))
	}
	return nil
}
