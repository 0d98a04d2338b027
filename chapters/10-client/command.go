package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/10-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/podtable"
)

type clientOptions struct {
	kubeconfig, node, via string
}

// NewClientCommand builds the chapter's command: one node's pods, read from its kubelet in the
// four steps an agent takes, and the apiserver's node proxy when the kubelet cannot be reached.
func NewClientCommand(ctx context.Context) *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "10-client --node NAME [--via auto|kubelet|apiserver]",
		Short: "Read one node's pods from its kubelet: discovery, a ServiceAccount token, verified TLS, GET /pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(ctx, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's in-cluster config)")
	f.StringVar(&o.node, "node", "", "the node whose kubelet to ask")
	f.StringVar(&o.via, "via", "auto", "kubelet, apiserver (its node proxy), or auto (the proxy only if the kubelet cannot be reached)")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}

func (o *clientOptions) run(ctx context.Context, out io.Writer) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	apiserver, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubeletclient.New(apiserver, kubeletclient.Options{Via: kubeletclient.Via(o.via),
		Names: kubeletclient.Names{"Via": "--via"}})
	if err != nil {
		return err
	}

	// 1. Discovery: the Node (read once) says where its kubelet is: the first address of the preferred
	// types, the port from .status.daemonEndpoints; --via auto or apiserver goes on without them (the
	// node proxy needs neither). Others' text is printed with control characters escaped.
	node, err := client.Node(ctx, o.node)
	if err != nil {
		return err
	}
	switch endpoint, err := client.EndpointOf(node); {
	case err != nil && client.Options().Via == kubeletclient.ViaKubelet:
		return err
	case err != nil:
		fmt.Fprintf(out, "1. discovery:    %s\n", kubeletclient.Printable(err.Error(), false))
	default:
		fmt.Fprintf(out, "1. discovery:    %s (%s; port from %s)\n", kubeletclient.Printable(endpoint.URL(), false), endpoint.Address.Type, endpoint.PortFrom)
	}

	// 2. The token: never the kubeconfig's own credentials, but a short-lived token of a
	// ServiceAccount (the pod's own, inside a pod), sent only over verified TLS.
	fmt.Fprintf(out, "2. credentials:  %s\n", client.Credentials)

	// 3 and 4. Verified TLS (the cluster's CA) and GET /pods; the apiserver's node proxy only
	// when the kubelet could not be reached at all.
	r := client.GetOf(ctx, node, kubeletclient.ReadEndpoints["pods"])
	if r.FellBack != nil {
		fmt.Fprintf(out, "   the kubelet could not be reached (%s): the apiserver's node proxy was asked instead\n", kubeletclient.Printable(firstLine(r.FellBack), false))
	}
	if r.Err != nil {
		return errors.New(kubeletclient.Printable(r.Err.Error(), true))
	}
	verified := "the kubelet's certificate, checked against the cluster's CA"
	if r.Via == "apiserver" {
		verified = "the apiserver's certificate; the apiserver asks the kubelet with its own identity"
	}
	fmt.Fprintf(out, "3. verified TLS: %s\n4. GET %s: %d pods\n\n", verified, kubeletclient.Printable(r.URL, false), len(r.Pods))

	var table bytes.Buffer
	if err := podtable.Print(&table, podtable.Rows(o.node, r.Pods), podtable.Node, podtable.Namespace, podtable.Name,
		podtable.Ready, podtable.Status, podtable.Restarts(podtable.Clock(time.Now)), podtable.Source); err != nil {
		return err
	}
	_, err = io.WriteString(out, kubeletclient.Printable(table.String(), true))
	return err
}

func firstLine(err error) string {
	line, _, _ := bytes.Cut([]byte(err.Error()), []byte("\n"))
	return string(line)
}
