package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/podtable"
)

type clientOptions struct {
	kubeconfig, node, via, podsAPISocket string
}

// NewClientCommand builds the chapter's command: one node's pods, read from its kubelet in the
// four steps an agent takes — through the kubelet's Pods API socket on the node itself, over
// HTTPS, or through the apiserver's node proxy when the kubelet cannot be reached.
func NewClientCommand(ctx context.Context) *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "11-client --node NAME [--via auto|podsapi|kubelet|apiserver]",
		Short: "Read one node's pods from its kubelet: its Pods API socket, or discovery, a ServiceAccount token, verified TLS, GET /pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(ctx, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's in-cluster config)")
	f.StringVar(&o.node, "node", "", "the node whose kubelet to ask")
	f.StringVar(&o.via, "via", "auto", "podsapi (the kubelet's socket, on its node), kubelet (HTTPS), apiserver (its node proxy), or auto (the socket if $NODE_NAME is --node, else the kubelet, and the proxy only if the kubelet cannot be reached)")
	f.StringVar(&o.podsAPISocket, "pods-api-socket", kubeletclient.DefaultPodsAPISocket, "the kubelet's Pods API socket, <root-dir>/pods-api/pods-api.sock")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}

func (o *clientOptions) run(ctx context.Context, out io.Writer) error {
	// On the node, the socket needs no apiserver: no kubeconfig is read for --via=podsapi.
	var apiserver *rest.Config
	if kubeletclient.Via(o.via) != kubeletclient.ViaPodsAPI {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.kubeconfig
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
		if err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
		apiserver = cfg
	}
	client, err := kubeletclient.New(apiserver, kubeletclient.Options{Via: kubeletclient.Via(o.via), PodsAPISocket: o.podsAPISocket,
		OwnNode: os.Getenv("NODE_NAME"), Names: kubeletclient.Names{"Via": "--via", "PodsAPISocket": "--pods-api-socket", "OwnNode": "$NODE_NAME"}})
	if err != nil {
		return err
	}
	defer client.Close()

	// 0. On the node itself (the downward API's NODE_NAME in a pod), the kubelet's Pods API
	// socket: no discovery, no token, no TLS — the socket's owner and mode are the trust.
	use, skipped := client.PodsAPIFor(o.node)
	if use {
		r := client.ListPods(ctx, o.node)
		if r.Err == nil || client.Options().Via == kubeletclient.ViaPodsAPI {
			fmt.Fprintf(out, "1. discovery:    %s (the kubelet's Pods API, on node %s)\n", r.URL, o.node)
			fmt.Fprintf(out, "2. credentials:  %s\n", client.Credentials)
			if r.Err != nil {
				return errors.New(kubeletclient.Printable(r.Err.Error(), true))
			}
			fmt.Fprintf(out, "3. trusted:      the socket and every directory above it are root's or yours, writable by no one else\n4. ListPods: %d pods\n\n", len(r.Pods))
			return printPods(out, o.node, r.Pods)
		}
		skipped = r.Err
	}
	if skipped != nil {
		fmt.Fprintf(out, "0. the Pods API: not used, %s\n   this is node %s ($NODE_NAME): asking the kubelet over HTTPS instead\n", kubeletclient.Printable(firstLine(skipped), false), o.node)
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
	return printPods(out, o.node, r.Pods)
}

// printPods prints the pods as kubectl's table, the kubelet's text with control characters escaped.
func printPods(out io.Writer, node string, pods []corev1.Pod) error {
	var table bytes.Buffer
	if err := podtable.Print(&table, podtable.Rows(node, pods), podtable.Node, podtable.Namespace, podtable.Name,
		podtable.Ready, podtable.Status, podtable.Restarts(podtable.Clock(time.Now)), podtable.Source); err != nil {
		return err
	}
	_, err := io.WriteString(out, kubeletclient.Printable(table.String(), true))
	return err
}

func firstLine(err error) string {
	line, _, _ := bytes.Cut([]byte(err.Error()), []byte("\n"))
	return string(line)
}
