package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/podtable"
)

type clientOptions struct {
	kubeconfig, context string
	node                string
	allNodes            bool
	kubeletURL          string
	addressTypes        string
	output              string
	concurrency         int
	auth, via           string
	interval            time.Duration
	opts                kubeletclient.Options

	out, errOut io.Writer
}

// NewClientCommand builds the chapter's command.
func NewClientCommand(ctx context.Context) *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "08-client (--node NAME | --all-nodes | --kubelet-url URL) [flags]",
		Short: "Fetch /pods from kubelets the way production agents should",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out, o.errOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := o.complete(); err != nil {
				return err
			}
			return o.run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's in-cluster config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context to use")
	f.StringVar(&o.node, "node", "", "the node whose kubelet to ask")
	f.BoolVar(&o.allNodes, "all-nodes", false, "ask every node's kubelet")
	f.StringVar(&o.kubeletURL, "kubelet-url", "", "ask this kubelet (https://host:port, or http:// for the read-only port) without discovery")
	f.StringVar(&o.addressTypes, "kubelet-preferred-address-types", "InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP", "which node address to use, in order")
	f.IntVar(&o.opts.KubeletPort, "kubelet-port", 0, "the kubelet's port (default: the Node's .status.daemonEndpoints.kubeletEndpoint.port)")
	f.StringVar(&o.auth, "auth", "auto", "credentials for the kubelet: auto, token, kubeconfig or none")
	f.StringVar(&o.opts.TokenFile, "token-file", "", "bearer token file (default for --auth=token: the pod's ServiceAccount token)")
	f.StringVar(&o.opts.KubeletCAFile, "kubelet-ca-file", "", "CA of the kubelets' serving certificates (default: the cluster's CA)")
	f.BoolVar(&o.opts.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the kubelet's certificate (encrypted, not authenticated)")
	f.StringVar(&o.via, "via", "auto", "kubelet, apiserver (its node proxy), or auto (the proxy only if the kubelet cannot be reached)")
	f.StringVarP(&o.output, "output", "o", "table", "table, wide, json, yaml or name")
	f.IntVar(&o.concurrency, "concurrency", 8, "with --all-nodes, how many kubelets to ask at once")
	f.DurationVar(&o.opts.Timeout, "request-timeout", 10*time.Second, "how long to wait for each answer")
	f.BoolVar(&o.opts.HTTP1, "http1", false, "do not negotiate HTTP/2")
	f.DurationVar(&o.interval, "interval", 0, "ask again at this interval until stopped, as an agent polls (0: once)")
	return cmd
}

func (o *clientOptions) complete() error {
	switch {
	case o.node == "" && !o.allNodes && o.kubeletURL == "":
		return errors.New("say which kubelet: --node NAME, --all-nodes or --kubelet-url URL")
	case o.allNodes && (o.node != "" || o.kubeletURL != ""):
		return errors.New("--all-nodes asks every node; drop --node and --kubelet-url")
	}
	types, err := kubeletclient.ParseAddressTypes(o.addressTypes)
	if err != nil {
		return err
	}
	o.opts.AddressTypes = types
	o.opts.Auth, o.opts.Via = kubeletclient.AuthMode(o.auth), kubeletclient.Via(o.via)
	switch o.opts.Via {
	case kubeletclient.ViaKubelet, kubeletclient.ViaAPIServer, kubeletclient.ViaAuto:
	default:
		return fmt.Errorf("unknown --via %q: use kubelet, apiserver or auto", o.via)
	}
	switch o.output {
	case "table", "wide", "json", "yaml", "name":
	default:
		return fmt.Errorf("unknown output format %q: use table, wide, json, yaml or name", o.output)
	}
	return nil
}

// apiserverConfig loads the kubeconfig as kubectl does; inside a pod with no kubeconfig it is the
// in-cluster configuration. With only --kubelet-url and a token (or nothing), none is needed.
func (o *clientOptions) apiserverConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err != nil && o.kubeletURL != "" && o.opts.Auth != kubeletclient.AuthKubeconfig {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("no cluster to ask (%w): point --kubeconfig at minikube's, or run chapter 07 for an embedded one", err)
	}
	return cfg, nil
}

func (o *clientOptions) run(ctx context.Context) error {
	apiserver, err := o.apiserverConfig()
	if err != nil {
		return err
	}
	if o.opts.InsecureSkipTLSVerify {
		fmt.Fprintln(o.errOut, "warning: --insecure-skip-tls-verify: the kubelet's certificate is not checked; anyone on the path can pretend to be it")
	}
	client, err := kubeletclient.New(apiserver, o.opts)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Kubelet credentials", "using", client.Credentials)
	if o.interval <= 0 {
		return o.fetch(ctx, client)
	}
	// As an agent: one client, its connections and token kept, asked again and again.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		if err := o.fetch(ctx, client); err != nil {
			fmt.Fprintln(o.errOut, "error:", err) // an agent keeps going
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.interval):
		}
	}
}

// fetch asks the kubelet(s) once and prints the pods.
func (o *clientOptions) fetch(ctx context.Context, client *kubeletclient.Client) error {
	var err error
	var results []kubeletclient.Result
	switch {
	case o.allNodes:
		if results, err = client.AllNodes(ctx, o.concurrency); err != nil {
			return err
		}
	case o.kubeletURL != "":
		r := client.FetchURL(ctx, o.kubeletURL)
		r.Node = o.node
		results = []kubeletclient.Result{r}
	default:
		results = []kubeletclient.Result{client.Pods(ctx, o.node)}
	}

	if len(results) == 1 && results[0].Err != nil {
		if r := results[0]; r.FellBack != nil {
			fmt.Fprintf(o.errOut, "note: the kubelet of %s could not be reached (%s); the apiserver's node proxy was asked instead, and failed too.\n", r.Node, firstLine(r.FellBack))
		}
		return results[0].Err // one kubelet asked: its error is the command's
	}
	var failed []string
	var rows []podtable.Row
	for _, r := range results {
		if r.FellBack != nil {
			fmt.Fprintf(o.errOut, "note: the kubelet of %s could not be reached (%s); fetched through the apiserver's node proxy instead.\n", r.Node, firstLine(r.FellBack))
		}
		if r.Err != nil {
			failed = append(failed, r.Node)
			fmt.Fprintf(o.errOut, "error: node %s: %v\n", r.Node, r.Err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Fetched", "node", r.Node, "via", r.Via, "url", r.URL, "protocol", r.Protocol, "pods", len(r.Pods))
		for i := range r.Pods {
			rows = append(rows, podtable.Row{Node: r.Node, Pod: &r.Pods[i]})
		}
	}
	if err := o.print(rows); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d kubelets failed: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return nil
}

func (o *clientOptions) print(rows []podtable.Row) error {
	phase := podtable.Column{Header: "PHASE", Value: func(r podtable.Row) string { return string(r.Pod.Status.Phase) }}
	switch o.output {
	case "table":
		return podtable.Print(o.out, rows, podtable.Node, podtable.Namespace, podtable.Name, phase, podtable.Source)
	case "wide":
		uid := podtable.Column{Header: "UID", Value: func(r podtable.Row) string { return string(r.Pod.UID) }}
		return podtable.Print(o.out, rows, podtable.Node, podtable.Namespace, podtable.Name, phase, podtable.Source, podtable.IP, uid, podtable.Age(time.Now))
	}
	list := &corev1.PodList{}
	list.Kind, list.APIVersion = "PodList", "v1"
	for _, r := range rows {
		list.Items = append(list.Items, *r.Pod)
	}
	sort.SliceStable(list.Items, func(i, j int) bool { // as the table sorts: node, namespace, name
		a, b := list.Items[i], list.Items[j]
		return a.Spec.NodeName+"/"+a.Namespace+"/"+a.Name < b.Spec.NodeName+"/"+b.Namespace+"/"+b.Name
	})
	switch o.output {
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(list, o.out)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(list, o.out)
	}
	names := &printers.NamePrinter{}
	for i := range list.Items {
		pod := &list.Items[i]
		pod.Kind, pod.APIVersion = "Pod", "v1"
		if err := names.PrintObj(pod, o.out); err != nil {
			return err
		}
	}
	return nil
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
