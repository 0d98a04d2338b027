package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

type execOptions struct {
	kubeconfig, node, via, tokenFile string
	kubeletCAFile, tlsServerName     string
	namespace, container             string
	pod                              string
	command                          []string

	out, errOut io.Writer
}

// NewNodeExecCommand builds the exercise's command: a command run in a container through the
// kubelet's /exec over a websocket — an HTTP GET with an Upgrade header — with an identity's token.
func NewNodeExecCommand(ctx context.Context) *cobra.Command {
	o := &execOptions{}
	cmd := &cobra.Command{
		Use:   "17-nodes-proxy-exec --node NAME --via kubelet|apiserver --token-file FILE -n NAMESPACE -c CONTAINER POD -- COMMAND...",
		Short: "Run a command in a pod through the kubelet's /exec, as an identity that may only get nodes/proxy",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.out, o.errOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := o.complete(cmd, args); err != nil {
				return err
			}
			return o.run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file: where the apiserver is (default: $KUBECONFIG or ~/.kube/config); its credentials only read the Node, for --via=kubelet")
	f.StringVar(&o.node, "node", "", "the node the pod runs on")
	f.StringVar(&o.via, "via", "", "kubelet (its port, straight) or apiserver (its node proxy)")
	f.StringVar(&o.tokenFile, "token-file", "", "the identity's bearer token, sent to the kubelet or to the apiserver")
	f.StringVar(&o.kubeletCAFile, "kubelet-ca-file", "", "with --via=kubelet: the CA of the kubelet's serving certificate (default: the cluster's)")
	f.StringVar(&o.tlsServerName, "kubelet-tls-server-name", "", "with --via=kubelet: check the kubelet's certificate against this name, or a node address type (Hostname)")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "the pod's namespace")
	f.StringVarP(&o.container, "container", "c", "", "the container to run the command in")
	return cmd
}

func (o *execOptions) complete(cmd *cobra.Command, args []string) error {
	if cmd.ArgsLenAtDash() != 1 {
		return errors.New("give the pod, then -- and the command: POD -- COMMAND...")
	}
	o.pod, o.command = args[0], args[1:]
	switch {
	case o.node == "":
		return errors.New("--node: the node the pod runs on")
	case o.via != "kubelet" && o.via != "apiserver":
		return fmt.Errorf("--via %q: kubelet (its port) or apiserver (its node proxy)", o.via)
	case o.tokenFile == "":
		return errors.New("--token-file: the identity's token (kubectl create token NAME > FILE)")
	case o.container == "":
		return errors.New("-c: the container to run the command in")
	case o.via == "apiserver" && (o.kubeletCAFile != "" || o.tlsServerName != ""):
		return errors.New("--kubelet-ca-file and --kubelet-tls-server-name would have no effect with --via=apiserver: the apiserver calls the kubelet. Drop them")
	}
	return nil
}

func (o *execOptions) run(ctx context.Context) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	apiserver, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	// /exec/NAMESPACE/POD/CONTAINER on the kubelet, or the same path under the node's proxy
	// subresource on the apiserver.
	path := url.PathEscape(o.namespace) + "/" + url.PathEscape(o.pod) + "/" + url.PathEscape(o.container)
	// The kubelet's names for the streams (k8s.io/api/core/v1: ExecStdoutParam, ExecStderrParam).
	query := url.Values{corev1.ExecStdoutParam: {"1"}, corev1.ExecStderrParam: {"1"}, "command": o.command}
	var cfg *rest.Config
	var target string
	if o.via == "kubelet" {
		cfg, target, err = o.kubelet(ctx, apiserver)
		if err != nil {
			return err
		}
		target += "/exec/" + path
	} else {
		// The identity's token instead of the kubeconfig's credentials: the apiserver decides
		// whether it may get nodes/proxy, then calls the kubelet as itself.
		cfg = rest.AnonymousClientConfig(apiserver)
		cfg.BearerTokenFile = o.tokenFile
		target, err = url.JoinPath(cfg.Host, "api", "v1", "nodes", o.node, "proxy", "exec")
		if err != nil {
			return err
		}
		target += "/" + path
	}
	// A websocket: the request is a GET, whatever it then does.
	exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", target+"?"+query.Encode())
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: o.out, Stderr: o.errOut})
}

// kubelet is the configuration that reaches the node's kubelet with the identity's token, and the
// kubelet's URL: the Node read with the kubeconfig, its certificate verified as chapter 11 does.
func (o *execOptions) kubelet(ctx context.Context, apiserver *rest.Config) (*rest.Config, string, error) {
	client, err := kubeletclient.New(apiserver, kubeletclient.Options{Via: kubeletclient.ViaKubelet, Auth: kubeletclient.AuthToken,
		TokenFile: o.tokenFile, KubeletCAFile: o.kubeletCAFile, TLSServerName: o.tlsServerName,
		Names: kubeletclient.Names{"TokenFile": "--token-file", "KubeletCAFile": "--kubelet-ca-file", "TLSServerName": "--kubelet-tls-server-name"}})
	if err != nil {
		return nil, "", err
	}
	node, err := client.Node(ctx, o.node)
	if err != nil {
		return nil, "", err
	}
	e, err := client.EndpointOf(node)
	if err != nil {
		return nil, "", err
	}
	cfg := rest.CopyConfig(client.KubeletConfig())
	if e.ServerName != "" {
		cfg.ServerName = e.ServerName // dial the address, check the certificate for this name
	}
	return cfg, e.URL(), nil
}
