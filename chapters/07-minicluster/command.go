package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/07-minicluster/minicluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/podtable"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/relay"
)

type clusterOptions struct {
	nodes         int
	nodeNames     []string
	staticPodPath string
	kubeconfig    string
	nodeIP        string
	kubeletLog    string
	once          bool
	// Set by this program for its own copy inside the private network namespace.
	relaySocket string
	relayPort   int

	out io.Writer
}

// NewMiniclusterCommand builds the chapter's command.
func NewMiniclusterCommand(ctx context.Context) *cobra.Command {
	o := &clusterOptions{}
	cmd := &cobra.Command{
		Use:   "07-minicluster",
		Short: "Run etcd, kube-apiserver and real kubelets in this process, and print a kubeconfig for kubectl",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			if err := o.complete(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
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
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (default: in the cluster's temporary directory)")
	f.StringVar(&o.nodeIP, "node-ip", "", "run on this machine's network with this node IP (default: a private network namespace)")
	f.StringVar(&o.kubeletLog, "log", "", `file for the components' log lines; "-" for stderr; default: a temporary file removed on exit`)
	f.BoolVar(&o.once, "once", false, "print and stop instead of serving until Ctrl-C")
	f.StringVar(&o.relaySocket, "relay-socket", "", "")
	f.IntVar(&o.relayPort, "relay-port", 0, "")
	_ = f.MarkHidden("relay-socket")
	_ = f.MarkHidden("relay-port")
	return cmd
}

func (o *clusterOptions) complete() error {
	if len(o.nodeNames) == 0 {
		for i := range o.nodes {
			name := "walkthrough"
			if i > 0 {
				name += "-" + strconv.Itoa(i+1)
			}
			o.nodeNames = append(o.nodeNames, name)
		}
	}
	path, err := filepath.Abs(o.staticPodPath)
	if err != nil {
		return err
	}
	if info, err := os.Stat(path); err != nil || !info.IsDir() {
		return fmt.Errorf("static pod path %s is not a readable directory", o.staticPodPath)
	}
	o.staticPodPath = path
	if o.kubeconfig != "" {
		o.kubeconfig, err = filepath.Abs(o.kubeconfig)
	}
	return err
}

// runInPrivateNetwork runs this program again inside a private network namespace and relays
// 127.0.0.1:<port> on the host to the apiserver in there, through a unix socket.
func (o *clusterOptions) runInPrivateNetwork(ctx context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
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
	child, err := netns.Command(args...)
	if err != nil {
		return fmt.Errorf("%w; or run on this machine's network with --node-ip=<one of its addresses>", err)
	}
	child.Stdin = nil
	child.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // Ctrl-C reaches this process, which passes it on once
		Pdeathsig: syscall.SIGTERM, // and if this process dies, the cluster stops too
	}
	if err := child.Start(); err != nil {
		return fmt.Errorf("start the cluster in a private network namespace: %w", err)
	}
	relayCtx, stopRelay := context.WithCancel(context.Background())
	defer stopRelay()
	go relay.Serve(relayCtx, l, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	})
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case err = <-exited:
	case <-ctx.Done():
		_ = child.Process.Signal(syscall.SIGINT)
		err = <-exited
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return program.ErrReported // it printed its error
	}
	if err != nil {
		return fmt.Errorf("the cluster's process: %w", err)
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
	opts := minicluster.Options{NodeNames: o.nodeNames, NodeIP: nodeIP, StaticPodPath: o.staticPodPath, Kubeconfig: o.kubeconfig}
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
	fmt.Fprintf(o.out, "  network:     %s\n  node IP:     %s\n  kubeconfig:  %s\n  log:         %s\n\n", network, nodeIP, c.Kubeconfig, logFile)

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
		c.Kubeconfig, c.Kubeconfig, c.Nodes[0].Name)
	if o.once {
		return nil
	}
	fmt.Fprintln(o.out, "\nServing until Ctrl-C.")
	<-ctx.Done()
	fmt.Fprintln(o.out)
	return nil
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
