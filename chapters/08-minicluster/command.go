package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/08-minicluster/minicluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeconfig"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/podtable"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/relay"
)

// maxNodes is as many kubelets as one process runs here: each is a whole kubelet, started one at
// a time.
const maxNodes = 10

// contextName names the kubeconfig's context and cluster; its user is contextName-admin.
const contextName = "walkthrough"

type clusterOptions struct {
	nodes         int
	nodesSet      bool // --nodes was given, not its default
	nodeNames     []string
	staticPodPath string
	kubeconfig    string
	nodeIP        string
	kubeletLog    string
	podsAPILink   string
	once          bool
	// apiserverPort is where kubectl reaches the apiserver in the private network namespace,
	// on 127.0.0.1 (0: a free port).
	apiserverPort int
	// Set by this program for its own copy inside the private network namespace.
	relaySocket string
	relayPort   int

	out io.Writer
}

// NewMiniclusterCommand builds the chapter's command.
func NewMiniclusterCommand(ctx context.Context) *cobra.Command {
	o := &clusterOptions{}
	cmd := &cobra.Command{
		Use:   "08-minicluster",
		Short: "Run etcd, kube-apiserver and real kubelets in this process, and print a kubeconfig for kubectl",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			o.nodesSet = cmd.Flags().Changed("nodes")
			if err := o.validate(); err != nil {
				return err
			}
			if err := o.complete(); err != nil {
				return err
			}
			ctx, stop := program.SignalContext(ctx)
			defer stop()
			if _, inside := netns.Inside(); o.nodeIP == "" && !inside {
				return o.runInPrivateNetwork(ctx)
			}
			return o.run(ctx, cmd)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 1, "how many kubelets (nodes) to start")
	f.StringSliceVar(&o.nodeNames, "node-names", nil, "the nodes' names (default: walkthrough, then walkthrough-2, …)")
	f.StringVar(&o.staticPodPath, "static-pod-path", "examples/static-pods", "every kubelet's static pod directory")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "a kubeconfig to merge the cluster's context into, as kubectl config does (taken out again on exit; default: a kubeconfig in the cluster's temporary directory)")
	f.StringVar(&o.nodeIP, "node-ip", "", "run on this machine's network with this node IP (default: a private network namespace)")
	f.IntVar(&o.apiserverPort, "apiserver-port", 0, "the port on 127.0.0.1 where kubectl reaches the apiserver in the private network namespace, free; 0 picks a free one")
	f.StringVar(&o.kubeletLog, "log", "", `file for the components' log lines; "-" for stderr; default: a temporary file removed on exit`)
	f.StringVar(&o.podsAPILink, "pods-api-link", "", "make this path a symbolic link to the first kubelet's Pods API socket (removed on exit): a client on this machine reads it there")
	f.BoolVar(&o.once, "once", false, "print and stop instead of serving until Ctrl-C")
	f.StringVar(&o.relaySocket, "relay-socket", "", "")
	f.IntVar(&o.relayPort, "relay-port", 0, "")
	_ = f.MarkHidden("relay-socket")
	_ = f.MarkHidden("relay-port")
	return cmd
}

// validate checks every flag before anything starts: a count or a name the cluster cannot have
// would otherwise fail minutes later, as a timeout waiting for nodes that never register.
func (o *clusterOptions) validate() error {
	if o.nodes < 1 || o.nodes > maxNodes {
		return fmt.Errorf("--nodes %d: 1 to %d (each node is a whole kubelet in this process)", o.nodes, maxNodes)
	}
	if len(o.nodeNames) > 0 {
		if o.nodesSet && o.nodes != len(o.nodeNames) {
			return fmt.Errorf("--nodes %d and --node-names %s (%d names): give one of them", o.nodes, strings.Join(o.nodeNames, ","), len(o.nodeNames))
		}
		if len(o.nodeNames) > maxNodes {
			return fmt.Errorf("--node-names %s: at most %d nodes (each node is a whole kubelet in this process)", strings.Join(o.nodeNames, ","), maxNodes)
		}
		seen := map[string]bool{}
		for _, name := range o.nodeNames {
			if err := program.NodeName("--node-names", name); err != nil {
				return err
			}
			if seen[name] {
				return fmt.Errorf("--node-names %s: %q twice (a node's name is its identity)", strings.Join(o.nodeNames, ","), name)
			}
			seen[name] = true
		}
	}
	if o.nodeIP != "" && o.apiserverPort != 0 {
		return fmt.Errorf("--apiserver-port %d: only in the private network namespace (with --node-ip, kubectl reaches the apiserver at the node IP)", o.apiserverPort)
	}
	if o.nodeIP != "" {
		// The check minicluster.Start makes, made first and naming the flag.
		if err := minicluster.CheckNodeIP("--node-ip", o.nodeIP); err != nil {
			return err
		}
	}
	if err := program.Port("--apiserver-port", o.apiserverPort); err != nil {
		return err
	}
	if o.kubeconfig != "" {
		if err := kubeconfig.Check(o.kubeconfig, kubeconfig.Names{Cluster: contextName, Context: contextName, User: contextName + "-admin"}); err != nil {
			return err
		}
	}
	if o.kubeletLog != "" && o.kubeletLog != "-" {
		if err := program.Absent("--log", o.kubeletLog); err != nil {
			return err
		}
	}
	if o.podsAPILink != "" {
		if err := program.Absent("--pods-api-link", o.podsAPILink); err != nil {
			return err
		}
	}
	if o.relayPort < 0 || o.relayPort > 65535 {
		return fmt.Errorf("--relay-port %d: a port is 1 to 65535", o.relayPort)
	}
	return nil
}

func (o *clusterOptions) complete() error {
	if len(o.nodeNames) == 0 {
		for i := range o.nodes {
			name := contextName
			if i > 0 {
				name += "-" + strconv.Itoa(i+1)
			}
			o.nodeNames = append(o.nodeNames, name)
		}
	}
	path, err := program.Directory("--static-pod-path", o.staticPodPath)
	if err != nil {
		return err
	}
	o.staticPodPath = path
	if o.kubeconfig != "" {
		if o.kubeconfig, err = filepath.Abs(o.kubeconfig); err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
		}
	}
	if o.podsAPILink != "" {
		if o.podsAPILink, err = filepath.Abs(o.podsAPILink); err != nil {
			return fmt.Errorf("--pods-api-link %s: %w", o.podsAPILink, err)
		}
	}
	return nil
}

// runInPrivateNetwork runs this program again inside a private network namespace and relays
// 127.0.0.1:<--apiserver-port> on the host to the apiserver in there, through a unix socket.
func (o *clusterOptions) runInPrivateNetwork(ctx context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(o.apiserverPort))
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }()
	dir, err := os.MkdirTemp("", "minicluster-relay-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	socket := filepath.Join(dir, "apiserver.sock")
	args := append(os.Args[1:], "--relay-socket="+socket, "--relay-port="+strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	// The relay outlives Ctrl-C: it stops when the cluster's process has ended.
	relayCtx, stopRelay := context.WithCancel(context.Background())
	defer stopRelay()
	go relay.Serve(relayCtx, l, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	})
	if err := netns.Rerun(ctx, args...); err != nil && !errors.Is(err, program.ErrReported) {
		return fmt.Errorf("the cluster in a private network namespace: %w; or run on this machine's network with --node-ip=<one of its addresses>", err)
	} else if err != nil {
		return err
	}
	return nil
}

func (o *clusterOptions) run(ctx context.Context, cmd *cobra.Command) error {
	// The components' log lines go to a file, and so does what etcd's client and gRPC print to
	// stderr, even after Stop: nothing lands between this program's own lines.
	logFile, closeLog, err := kubeletlog.ForProgram(cmd, o.kubeletLog)
	if err != nil {
		return err
	}
	defer closeLog()
	nodeIP, private := netns.Inside()
	if o.nodeIP != "" {
		nodeIP = o.nodeIP
	}
	// The cluster writes its kubeconfig into its own directory; a kubeconfig the reader names gets
	// the cluster's entries merged in, and taken out again on exit.
	opts := minicluster.Options{NodeNames: o.nodeNames, NodeIP: nodeIP, StaticPodPath: o.staticPodPath, Context: contextName}
	if o.relayPort > 0 {
		opts.KubeconfigServer = "https://127.0.0.1:" + strconv.Itoa(o.relayPort)
	}
	c, err := minicluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		c.Stop()
		fmt.Fprintln(o.out, "Stopped the cluster and removed its directory.")
	}()
	config := c.Kubeconfig
	if o.kubeconfig != "" {
		unmerge, err := kubeconfig.Merge(c.Kubeconfig, o.kubeconfig)
		if err != nil {
			return err
		}
		defer func() {
			if err := unmerge(); err != nil {
				fmt.Fprintf(o.out, "--kubeconfig %s: could not take the cluster's entries out: %v\n", o.kubeconfig, err)
			}
		}()
		config = o.kubeconfig
	}
	if o.podsAPILink != "" {
		unlink, err := linkPodsAPI(c.Nodes[0].Kubelet.RootDir, o.podsAPILink)
		if err != nil {
			return err
		}
		defer unlink()
	}
	if o.relaySocket != "" {
		l, err := net.Listen("unix", o.relaySocket)
		if err != nil {
			return fmt.Errorf("relay socket: %w", err)
		}
		apiserver := strings.TrimPrefix(c.Admin.Host, "https://")
		go relay.Serve(ctx, l, func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", apiserver)
		})
	}

	network := "this machine's network"
	if private {
		network = "a private network namespace (its lo carries the node IP); kubectl reaches the apiserver through 127.0.0.1"
	}
	fmt.Fprintf(o.out, "A mini-cluster in this process: etcd, kube-apiserver and %d real kubelet(s), all k8s.io/kubernetes v1.37.2.\n", len(c.Nodes))
	fmt.Fprintf(o.out, "  network:     %s\n  node IP:     %s\n  kubeconfig:  %s\n  log:         %s\n", network, nodeIP, config, logFile)
	if o.podsAPILink != "" {
		fmt.Fprintf(o.out, "  pods API:    %s, a link to %s's socket (the kubelet's local Pods API)\n", o.podsAPILink, c.Nodes[0].Name)
	}
	fmt.Fprintln(o.out)

	if err := c.WaitForNodesReady(ctx); err != nil {
		return interrupted(ctx, fmt.Errorf("nodes not ready: %w", err))
	}
	listing, err := staticpods.List(o.staticPodPath, "node")
	if err != nil {
		return err
	}
	mirrors, err := c.WaitForRunningMirrorPods(ctx, len(listing.Pods)*len(c.Nodes))
	if err != nil {
		return interrupted(ctx, fmt.Errorf("mirror pods: %w", err))
	}
	if err := o.printNodes(ctx, c); err != nil {
		return err
	}
	fmt.Fprintln(o.out, "\nMirror pods — the apiserver's copies of the kubelets' static pods, as `kubectl get pods -A` shows them on minikube:")
	var rows []podtable.Row
	for i := range mirrors {
		rows = append(rows, podtable.Row{Node: mirrors[i].Spec.NodeName, Pod: &mirrors[i]})
	}
	if err := podtable.Print(o.out, rows, podtable.Namespace, podtable.Name, podtable.Status, podtable.Node, podtable.Age(time.Now)); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "\nTry:\n  kubectl --kubeconfig %s get nodes,pods -A\n  kubectl --kubeconfig %s get --raw /api/v1/nodes/%s/proxy/pods\n",
		config, config, c.Nodes[0].Name)
	if o.once {
		return nil
	}
	fmt.Fprintln(o.out, "\nServing until Ctrl-C.")
	<-ctx.Done()
	fmt.Fprintln(o.out)
	return nil
}

// linkPodsAPI makes link a symbolic link to the Pods API socket of the kubelet rooted at root,
// <root-dir>/pods-api/pods-api.sock: the root directory is a temporary one, whose name changes
// from run to run. It returns what removes the link, if it is still this one.
func linkPodsAPI(root, link string) (unlink func(), err error) {
	socket := filepath.Join(root, "pods-api", "pods-api.sock")
	if err := os.Symlink(socket, link); err != nil {
		return nil, fmt.Errorf("--pods-api-link: %w", err)
	}
	remove := func() {
		if target, err := os.Readlink(link); err == nil && target == socket {
			_ = os.Remove(link)
		}
	}
	// Should a kubelet end the process (os.Exit(1)), the link goes first.
	unregister := kubeletlog.AtExit(remove)
	return func() { unregister(); remove() }, nil
}

// printNodes is `kubectl get nodes -o wide`, in short.
func (o *clusterOptions) printNodes(ctx context.Context, c *minicluster.Cluster) error {
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	tw := printers.GetNewTabWriter(o.out)
	fmt.Fprintln(tw, "NODE\tSTATUS\tKUBELET (INTERNAL-IP:PORT)")
	for _, n := range nodes.Items {
		status := "NotReady"
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, status, net.JoinHostPort(ip, strconv.Itoa(int(n.Status.DaemonEndpoints.KubeletEndpoint.Port))))
	}
	return tw.Flush()
}

// interrupted turns an error caused by Ctrl-C into a quiet exit.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
