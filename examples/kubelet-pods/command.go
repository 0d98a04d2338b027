package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/podtable"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
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
	allNodesTimeout     time.Duration
	opts                kubeletclient.Options

	out, errOut io.Writer
	now         func() time.Time
	// doctor is set by the doctor subcommand.
	doctor   bool
	watch    bool
	endpoint string
	// watcher remembers the last poll, with --watch.
	watcher *watcher
	// notedChoice says noteChoice has said which way auto took.
	notedChoice bool
}

// NewKubeletPodsCommand builds the tool's command.
func NewKubeletPodsCommand(ctx context.Context) *cobra.Command {
	return newClientCommand(ctx, &clientOptions{})
}

// newClientCommand lets tests preset what no flag sets (the ServiceAccount directory).
func newClientCommand(ctx context.Context, o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubelet-pods (--node NAME | --all-nodes | --kubelet-url URL) [flags]",
		Short: "Fetch /pods from kubelets the way production agents should",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out, o.errOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if o.now == nil {
				o.now = time.Now
			}
			if err := o.complete(cmd.Flags()); err != nil {
				return err
			}
			return redact(o.run(ctx))
		},
	}
	// Persistent: the doctor subcommand takes the same flags.
	f := cmd.PersistentFlags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's in-cluster config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context to use")
	f.StringVar(&o.node, "node", "", "the node whose kubelet to ask")
	f.BoolVar(&o.allNodes, "all-nodes", false, "ask every node's kubelet")
	f.StringVar(&o.kubeletURL, "kubelet-url", "", "ask this kubelet (https://host:port, or http:// for the read-only port with --auth=none) without discovery")
	f.StringVar(&o.addressTypes, "kubelet-preferred-address-types", "InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP", "which node address to dial, in order")
	f.IntVar(&o.opts.KubeletPort, "kubelet-port", 0, "the kubelet's port (default: the Node's .status.daemonEndpoints.kubeletEndpoint.port)")
	f.StringVar(&o.opts.TLSServerName, "kubelet-tls-server-name", "", "check the kubelet's certificate against this name instead of the address dialed: a node address type (Hostname) or a literal name")
	f.StringVar(&o.auth, "auth", "auto", "credentials for the kubelet: auto (--token-file, else the pod's ServiceAccount token, else a short-lived token of --service-account), token, serviceaccount, kubeconfig (your own) or none")
	f.StringVar(&o.opts.TokenFile, "token-file", "", "bearer token file (default for --auth=token: the pod's ServiceAccount token)")
	f.StringVar(&o.opts.ServiceAccount, "service-account", kubeletclient.DefaultServiceAccount, "NAMESPACE/NAME whose token is requested (TokenRequest, 10 minutes) outside a pod")
	f.StringVar(&o.opts.KubeletCAFile, "kubelet-ca-file", "", "CA of the kubelets' serving certificates (default: the cluster's CA)")
	f.BoolVar(&o.opts.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the kubelet's certificate (encrypted, not authenticated); credentials then also need --allow-credentials-to-unverified-kubelet")
	f.BoolVar(&o.opts.AllowCredentialsToUnverifiedKubelet, "allow-credentials-to-unverified-kubelet", false, "with --insecure-skip-tls-verify, send the credentials anyway (whoever answers gets them)")
	f.StringVar(&o.via, "via", "auto", "podsapi (the kubelet's Pods API socket, on its node), kubelet (HTTPS), apiserver (its node proxy), or auto (the socket for --own-node, then the kubelet, then the proxy if the kubelet cannot be reached)")
	f.StringVar(&o.opts.PodsAPISocket, "pods-api-socket", kubeletclient.DefaultPodsAPISocket, "the kubelet's Pods API socket (<root-dir>/pods-api/pods-api.sock; in a pod, the hostPath /var/lib/kubelet/pods-api mounted at its directory)")
	f.StringVar(&o.opts.OwnNode, "own-node", os.Getenv("NODE_NAME"), "the node this runs on, whose Pods API socket --via=auto reads (default: $NODE_NAME, which the DaemonSet sets from the downward API)")
	f.StringVarP(&o.output, "output", "o", "table", "table, wide, json, yaml or name")
	f.IntVar(&o.concurrency, "concurrency", 8, "with --all-nodes, how many kubelets to ask at once")
	f.DurationVar(&o.opts.Timeout, "request-timeout", 10*time.Second, "how long to wait for each answer")
	f.DurationVar(&o.allNodesTimeout, "all-nodes-timeout", time.Minute, "with --all-nodes, how long to wait for all answers")
	f.BoolVar(&o.opts.HTTP1, "http1", false, "do not negotiate HTTP/2")
	f.DurationVar(&o.interval, "interval", 0, "ask again at this interval until stopped, as an agent polls (0: once)")
	f.StringVar(&o.endpoint, "endpoint", "pods", "what to read: pods, runningpods, stats/summary, metrics/resource, configz or healthz (each needs its own permission: nodes/pods, nodes/stats, nodes/metrics, nodes/configz, nodes/healthz)")
	f.BoolVarP(&o.watch, "watch", "w", false, "print what changed between polls (ADD, UPDATE, REMOVE), as an agent's pod cache sees it; polls every --interval (default 10s)")
	// Where a pod's token and CA are mounted. Hidden: its use is tests that must not read the
	// machine's own /var/run/secrets.
	f.StringVar(&o.opts.ServiceAccountDir, "service-account-dir", o.opts.ServiceAccountDir, "directory of the pod's ServiceAccount token and ca.crt")
	_ = f.MarkHidden("service-account-dir")
	cmd.AddCommand(newDoctorCommand(ctx, o))
	return cmd
}

func (o *clientOptions) complete(flags *pflag.FlagSet) error {
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
	o.opts.Names = flagNames
	switch o.opts.Via {
	case kubeletclient.ViaPodsAPI, kubeletclient.ViaKubelet, kubeletclient.ViaAPIServer, kubeletclient.ViaAuto:
	default:
		return fmt.Errorf("unknown --via %q: use podsapi, kubelet, apiserver or auto", o.via)
	}
	if o.opts.Via == kubeletclient.ViaPodsAPI && (o.allNodes || o.kubeletURL != "" || o.doctor) {
		return errors.New("--via=podsapi reads the node this runs on, through its kubelet's socket: give --node NAME (--all-nodes, --kubelet-url and doctor go over HTTPS)")
	}
	switch {
	case o.doctor && o.output != "table" && o.output != "json":
		return fmt.Errorf("doctor prints a table or json, not %q", o.output)
	case o.output == "table", o.output == "wide", o.output == "json", o.output == "yaml", o.output == "name":
	default:
		return fmt.Errorf("unknown output format %q: use table, wide, json, yaml or name", o.output)
	}
	if o.kubeletURL != "" {
		// Before parsing: net/url's error would quote the URL, user info and all.
		if redacted := kubeletclient.RedactURL(o.kubeletURL); redacted != o.kubeletURL {
			return fmt.Errorf("--kubelet-url %s holds credentials (user info): the kubelet takes none that way; use --token-file", redacted)
		}
		if _, err := url.Parse(o.kubeletURL); err != nil {
			return fmt.Errorf("--kubelet-url: %w", err)
		}
	}
	if err := o.checkNumbers(); err != nil {
		return err
	}
	if err := o.noIgnoredFlags(flags); err != nil {
		return err
	}
	ep, ok := kubeletclient.ReadEndpoints[o.endpoint]
	switch {
	case !ok:
		return fmt.Errorf("unknown --endpoint %q: use pods, runningpods, stats/summary, metrics/resource, configz or healthz", o.endpoint)
	case !ep.Pods && flags.Changed("output"):
		return fmt.Errorf("-o would have no effect here: --endpoint=%s is printed as the kubelet wrote it. Drop it", o.endpoint)
	case !ep.Pods && o.watch:
		return fmt.Errorf("--watch follows pods; --endpoint=%s is not a pod list. Drop one", o.endpoint)
	case o.opts.Via == kubeletclient.ViaPodsAPI && o.endpoint != "pods":
		return fmt.Errorf("--endpoint=%s: the Pods API serves pods only; ask the kubelet over HTTPS (--via=kubelet)", o.endpoint)
	}
	if o.watch {
		if o.output != "table" {
			return fmt.Errorf("--watch prints changes, one line each; -o %s has no effect with it. Drop one", o.output)
		}
		if o.interval <= 0 {
			o.interval = 10 * time.Second
		}
		o.watcher = &watcher{}
	}
	if !flags.Changed("service-account") {
		o.opts.ServiceAccount = "" // the library's default, and no "ignored" complaint from it
	} else if _, _, err := kubeletclient.ParseServiceAccount(o.opts.ServiceAccount); err != nil {
		return fmt.Errorf("--service-account %w", err) // before any request: it becomes a path of the TokenRequest
	}
	return nil
}

// checkNumbers refuses, before any work, a number or duration that would silently mean something
// else than the reader typed: the library takes 0 for its default (10s, 1 minute, one at a
// time, the Node's port) and would let a negative timeout fail every request at once.
func (o *clientOptions) checkNumbers() error {
	if err := program.Positive("--request-timeout", o.opts.Timeout); err != nil {
		return err
	}
	if err := program.Positive("--all-nodes-timeout", o.allNodesTimeout); err != nil {
		return err
	}
	if o.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: must be 1 or more", o.concurrency)
	}
	if p := o.opts.KubeletPort; p < 0 || p > 65535 {
		return fmt.Errorf("--kubelet-port %d: a port is 1 to 65535 (0: the port the Node reports)", p)
	}
	if o.interval < 0 {
		return fmt.Errorf("--interval %s: must be 0 (once) or more", o.interval)
	}
	return nil
}

// noIgnoredFlags refuses a flag that the chosen mode would not use: a reader who sets one
// expects it to matter, and a silently ignored --kubelet-ca-file or --token-file is a wrong
// belief about what was checked or sent.
func (o *clientOptions) noIgnoredFlags(flags *pflag.FlagSet) error {
	// A URL's scheme is case-insensitive (RFC 3986): HTTP://… is plain HTTP too.
	plainHTTP := len(o.kubeletURL) >= len("http://") && strings.EqualFold(o.kubeletURL[:len("http://")], "http://")
	auth := o.opts.Auth
	rules := []struct {
		ignored bool
		flags   []string
		why     string
	}{
		{o.opts.Via == kubeletclient.ViaAPIServer,
			[]string{"auth", "token-file", "service-account", "kubelet-ca-file", "insecure-skip-tls-verify", "allow-credentials-to-unverified-kubelet", "kubelet-tls-server-name", "kubelet-port", "kubelet-preferred-address-types", "http1", "kubelet-url"},
			"with --via=apiserver the apiserver talks to the kubelet, with its own identity and settings"},
		{o.opts.Via == kubeletclient.ViaPodsAPI,
			[]string{"kubeconfig", "context", "auth", "token-file", "service-account", "kubelet-ca-file", "insecure-skip-tls-verify", "allow-credentials-to-unverified-kubelet", "kubelet-tls-server-name", "kubelet-port", "kubelet-preferred-address-types", "http1", "own-node"},
			"--via=podsapi reads the kubelet's socket: no apiserver, no TLS, no credentials"},
		{o.opts.Via == kubeletclient.ViaPodsAPI && o.watch, []string{"interval"}, "--watch on the Pods API streams each change as the kubelet makes it (WatchPods): there is no poll"},
		{o.opts.Via == kubeletclient.ViaKubelet || o.opts.Via == kubeletclient.ViaAPIServer || o.kubeletURL != "" || o.allNodes, []string{"pods-api-socket", "own-node"},
			"only --via=podsapi, or auto for --own-node's pods, reads the Pods API socket"},
		{o.kubeletURL != "", []string{"kubelet-port", "kubelet-preferred-address-types"}, "--kubelet-url already says where the kubelet is"},
		{o.kubeletURL != "" && o.opts.Via != kubeletclient.ViaKubelet && flags.Changed("via"), []string{"via"}, "--kubelet-url asks that URL only, with no proxy to fall back to"},
		{!o.allNodes || o.doctor, []string{"concurrency", "all-nodes-timeout"}, "they bound --all-nodes' fetch"},
		{o.doctor, []string{"kubelet-url", "interval", "watch", "endpoint", "pods-api-socket", "own-node"}, "doctor starts from the Node object, once, and reads /pods over HTTPS"},
		{plainHTTP, []string{"kubelet-ca-file", "insecure-skip-tls-verify", "kubelet-tls-server-name", "http1"}, "http:// has no TLS (and no HTTP/2)"},
		{auth != kubeletclient.AuthToken && auth != kubeletclient.AuthAuto, []string{"token-file"}, "only --auth=token (or auto) reads a token file"},
		{auth != kubeletclient.AuthServiceAccount && auth != kubeletclient.AuthAuto, []string{"service-account"}, "only --auth=serviceaccount (or auto, outside a pod) requests a token"},
		{auth == kubeletclient.AuthAuto && o.opts.TokenFile != "", []string{"service-account"}, "--token-file is used instead"},
		{o.kubeletURL != "" && !isAddressLiteral(o.opts.TLSServerName), []string{"kubelet-tls-server-name"}, "a node address type needs a Node to read it from; give a literal name with --kubelet-url"},
	}
	for _, r := range rules {
		if !r.ignored {
			continue
		}
		for _, name := range r.flags {
			if flags.Changed(name) {
				return fmt.Errorf("--%s would have no effect here: %s. Drop it", name, r.why)
			}
		}
	}
	return nil
}

// isAddressLiteral says whether a --kubelet-tls-server-name is a name rather than an address
// type to look up on the Node.
func isAddressLiteral(name string) bool {
	_, err := kubeletclient.ParseAddressTypes(name)
	return name == "" || err != nil
}

// apiserverConfig loads the kubeconfig as kubectl does; inside a pod with no kubeconfig it is the
// in-cluster configuration. Only when there is no configuration at all and none is needed
// (--kubelet-url with a token file, or nothing) does the client go on without one; a broken
// kubeconfig, a missing --kubeconfig file or an unknown --context is always an error.
func (o *clientOptions) apiserverConfig() (*rest.Config, error) {
	if o.opts.Via == kubeletclient.ViaPodsAPI {
		return nil, nil // the socket needs no apiserver
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err == nil {
		return cfg, nil
	}
	needed := o.kubeletURL == "" || o.opts.Auth == kubeletclient.AuthKubeconfig || o.opts.Auth == kubeletclient.AuthServiceAccount
	if clientcmd.IsEmptyConfig(err) && !needed && o.kubeconfig == "" && o.context == "" {
		return nil, nil
	}
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no cluster to ask (%w): point --kubeconfig at minikube's, or run chapter 08 for an embedded one", err)
	}
	return nil, fmt.Errorf("kubeconfig: %w", err)
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
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Kubelet credentials", "using", client.Credentials)
	if o.opts.AllowCredentialsToUnverifiedKubelet {
		fmt.Fprintf(o.errOut, "warning: --allow-credentials-to-unverified-kubelet: %s go to whoever answers\n", client.Credentials)
	}
	if o.interval <= 0 {
		return o.fetch(ctx, client)
	}
	// As an agent: one client, its connections and token kept, asked again and again.
	ctx, stop := program.SignalContext(ctx)
	defer stop()
	defer client.Close()
	if o.watch && o.kubeletURL == "" && !o.allNodes {
		// On its own node an agent need not poll: the kubelet's Pods API streams each change.
		use, skipped := client.PodsAPIFor(o.node)
		if use {
			return o.watchPodsAPI(ctx, client)
		}
		o.noteChoice(kubeletclient.Result{Node: o.node, PodsAPISkipped: skipped})
	}
	if o.kubeletURL == "" && o.opts.Via != kubeletclient.ViaAPIServer {
		// Discovery from an informer: one watch instead of a GET or LIST every poll.
		if err := client.WatchNodes(ctx, o.node); err != nil {
			return err
		}
	}
	for {
		if err := o.fetch(ctx, client); err != nil {
			fmt.Fprintln(o.errOut, "error:", redact(err)) // an agent keeps going
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.interval):
		}
	}
}

// fetch asks the kubelet(s) once and prints the pods — or, with --watch, what changed.
func (o *clientOptions) fetch(ctx context.Context, client *kubeletclient.Client) error {
	if !kubeletclient.ReadEndpoints[o.endpoint].Pods {
		return o.raw(ctx, client)
	}
	rows, via, answered, err := o.collect(ctx, client)
	if rows == nil && err != nil {
		return err
	}
	if o.watcher != nil {
		o.watcher.report(o.out, rows, answered)
	} else if perr := o.print(rows, via); perr != nil {
		return perr
	}
	return err
}

// ask asks the kubelet(s) once for --endpoint; each failure comes explained (agent.Explain).
func (o *clientOptions) ask(ctx context.Context, client *kubeletclient.Client) ([]kubeletclient.Result, error) {
	ep := kubeletclient.ReadEndpoints[o.endpoint]
	var r kubeletclient.Result
	switch {
	case o.allNodes:
		return agent.AllNodes(ctx, client, ep, o.concurrency, o.allNodesTimeout)
	case o.kubeletURL != "":
		r = client.GetURL(ctx, o.kubeletURL, ep)
		r.Node = o.node
	default:
		r = client.Get(ctx, o.node, ep)
	}
	r.Err, r.FellBack = agent.Explain(ctx, client, r.Err), agent.Explain(ctx, client, r.FellBack)
	return []kubeletclient.Result{r}, nil
}

// raw prints, for an endpoint that is not a pod list, each answer as the kubelet wrote it
// (JSON indented), under a "==> NODE <==" line when several nodes answered.
func (o *clientOptions) raw(ctx context.Context, client *kubeletclient.Client) error {
	results, err := o.ask(ctx, client)
	if err != nil {
		return err
	}
	if len(results) == 1 && results[0].Err != nil {
		return results[0].Err
	}
	var failed []string
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, r.Node)
			fmt.Fprintf(o.errOut, "error: node %s: %v\n", r.Node, redact(r.Err))
			continue
		}
		if len(results) > 1 {
			fmt.Fprintf(o.out, "==> %s <==\n", kubeletclient.Printable(r.Node, false))
		}
		body := r.Body
		var indented bytes.Buffer
		if json.Indent(&indented, body, "", "  ") == nil {
			body = indented.Bytes() // valid JSON: no raw control character left in it
		} else {
			body = []byte(kubeletclient.Printable(string(body), true)) // the kubelet's text, as text
		}
		if _, err := o.out.Write(body); err != nil {
			return err
		}
		if len(body) > 0 && body[len(body)-1] != '\n' {
			fmt.Fprintln(o.out)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d kubelets failed: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return nil
}

// collect asks the kubelet(s) once. It returns the pods, the way each node was reached, which
// nodes answered, and an error when any kubelet failed (rows is nil when the only one did).
func (o *clientOptions) collect(ctx context.Context, client *kubeletclient.Client) (rows []podtable.Row, via map[string]string, answered map[string]bool, err error) {
	results, err := o.ask(ctx, client)
	if err != nil {
		return nil, nil, nil, err
	}

	for _, r := range results {
		o.noteChoice(r)
	}
	if len(results) == 1 && results[0].Err != nil {
		if r := results[0]; r.FellBack != nil {
			fmt.Fprintf(o.errOut, "note: the kubelet of %s could not be reached (%s); the apiserver's node proxy was asked instead, and failed too.\n", redactText(r.Node), redactText(firstLine(r.FellBack)))
		}
		return nil, nil, nil, results[0].Err // one kubelet asked: its error is the command's
	}
	var failed []string
	rows = []podtable.Row{}
	via, answered = map[string]string{}, map[string]bool{}
	for _, r := range results {
		if r.FellBack != nil {
			fmt.Fprintf(o.errOut, "note: the kubelet of %s could not be reached (%s); fetched through the apiserver's node proxy instead.\n", redactText(r.Node), redactText(firstLine(r.FellBack)))
		}
		if r.Err != nil {
			failed = append(failed, r.Node)
			fmt.Fprintf(o.errOut, "error: node %s: %v\n", r.Node, redact(r.Err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Fetched", "node", r.Node, "via", r.Via, "url", r.URL, "serverName", r.ServerName, "protocol", r.Protocol, "pods", len(r.Pods))
		via[r.Node], answered[r.Node] = r.Via, true
		for i := range r.Pods {
			rows = append(rows, podtable.Row{Node: r.Node, Pod: &r.Pods[i]})
		}
	}
	if len(failed) > 0 {
		err = fmt.Errorf("%d of %d kubelets failed: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return rows, via, answered, err
}

// noteChoice says, once, which way --via=auto took to this node's pods when it is the node this
// runs on (--own-node): the Pods API socket, or why not.
func (o *clientOptions) noteChoice(r kubeletclient.Result) {
	if o.opts.Via != kubeletclient.ViaAuto || o.notedChoice {
		return
	}
	switch {
	case r.Via == string(kubeletclient.ViaPodsAPI):
		fmt.Fprintf(o.errOut, "note: %s is the node this runs on (--own-node): its pods come from the kubelet's Pods API socket, %s.\n", redactText(r.Node), redactText(o.opts.PodsAPISocket))
	case r.PodsAPISkipped != nil:
		fmt.Fprintf(o.errOut, "note: %s is the node this runs on (--own-node), but its Pods API socket was not used: %s\n  Asking the kubelet over HTTPS instead.\n", redactText(r.Node), redactText(r.PodsAPISkipped.Error()))
	default:
		return
	}
	o.notedChoice = true
}

func (o *clientOptions) print(rows []podtable.Row, via map[string]string) error {
	now := podtable.Clock(o.now)
	switch o.output {
	case "table", "wide":
		// Every cell is a kubelet's text: the table is printed with control characters escaped.
		var table bytes.Buffer
		var err error
		if o.output == "table" {
			err = podtable.Print(&table, rows, podtable.Node, podtable.Namespace, podtable.Name, podtable.Ready, podtable.Status, podtable.Restarts(now), podtable.Source)
		} else {
			viaColumn := podtable.Column{Header: "VIA", Value: func(r podtable.Row) string { return via[r.Node] }}
			uid := podtable.Column{Header: "UID", Value: func(r podtable.Row) string { return string(r.Pod.UID) }}
			err = podtable.Print(&table, rows, podtable.Node, podtable.Namespace, podtable.Name, podtable.Ready, podtable.Status, podtable.Restarts(now),
				podtable.Source, podtable.IP, viaColumn, uid, podtable.Age(now))
		}
		if err != nil {
			return err
		}
		_, err = io.WriteString(o.out, kubeletclient.Printable(table.String(), true))
		return err
	}
	// A list as kubectl prints one: kind and apiVersion set, and "items": [] when empty.
	list := &corev1.PodList{Items: []corev1.Pod{}}
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
	var printed bytes.Buffer
	for i := range list.Items {
		pod := &list.Items[i]
		pod.Kind, pod.APIVersion = "Pod", "v1"
		if err := names.PrintObj(pod, &printed); err != nil {
			return err
		}
	}
	_, err := io.WriteString(o.out, kubeletclient.Printable(printed.String(), true))
	return err
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// userinfo matches the user-info part of a URL in any text: scheme://USER[:PASSWORD]@host.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s"]+@`)

// redactText hides user info in the URLs of a message: net/http masks a password, not a user
// name, and either may be a secret. It also escapes control characters (kubeletclient.Printable):
// a message quotes servers' words.
func redactText(s string) string {
	return kubeletclient.Printable(userinfo.ReplaceAllString(s, "${1}xxxxx@"), true)
}

// redact is err with redactText applied to its message, for printing.
func redact(err error) error {
	if err == nil {
		return nil
	}
	if s := redactText(err.Error()); s != err.Error() {
		return errors.New(s)
	}
	return err
}

// flagNames are this program's flags for the settings the library's errors advise changing, so
// that its errors name what a reader types here (the library, lifted into an agent, names its
// Options' fields).
var flagNames = kubeletclient.Names{
	"AddressTypes":                        "--kubelet-preferred-address-types",
	"KubeletPort":                         "--kubelet-port",
	"TLSServerName":                       "--kubelet-tls-server-name",
	"Auth":                                "--auth",
	"TokenFile":                           "--token-file",
	"ServiceAccount":                      "--service-account",
	"KubeletCAFile":                       "--kubelet-ca-file",
	"InsecureSkipTLSVerify":               "--insecure-skip-tls-verify",
	"AllowCredentialsToUnverifiedKubelet": "--allow-credentials-to-unverified-kubelet",
	"Via":                                 "--via",
	"KubeletURL":                          "--kubelet-url",
	"PodsAPISocket":                       "--pods-api-socket",
	"OwnNode":                             "--own-node",
	"Timeout":                             "--request-timeout",
}
