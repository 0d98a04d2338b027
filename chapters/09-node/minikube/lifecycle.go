package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-node/node"
)

// componentsVersion is the Kubernetes version the node's components were built at, as their
// kubeadm says.
func (o *options) componentsVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(o.components, "bin", "kubeadm"), "version", "-o", "short").Output()
	if err != nil {
		return "", fmt.Errorf("the node's components are not built in %s (make node-components): %w", o.components, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// normalizeVersion is minikube's: a leading v is optional ("1.37.2" is "v1.37.2").
func normalizeVersion(v string) string {
	if v == "" || strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

func (o *options) startCommand(ctx context.Context) *cobra.Command {
	var version, driver string
	var extra node.ExtraConfig
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Starts a local Kubernetes cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := extra.Validate(); err != nil {
				return usage("%v", err)
			}
			if driver != "" && driver != "docker" {
				return usage("the %q driver is not available here: this minikube has one driver, shaped like minikube's docker driver", driver)
			}
			return o.start(ctx, normalizeVersion(version), extra, cmd.Flags().Changed("extra-config"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&version, "kubernetes-version", "", "The Kubernetes version that the minikube VM will use (here: the version the node's components were built at)")
	f.StringVar(&driver, "driver", "", "Driver is one of: docker (the only one here)")
	f.Var(&extra, "extra-config", `A set of key=value pairs that describe configuration that may be passed to different components.
The key should be '.' separated, and the first part before the dot is the component to apply the configuration to.
Valid components are: kubelet, kubeadm, apiserver, controller-manager, etcd, kube-proxy, scheduler`)
	return cmd
}

func (o *options) start(ctx context.Context, version string, extra node.ExtraConfig, extraGiven bool) error {
	built, err := o.componentsVersion(ctx)
	if err != nil {
		return err
	}
	if version == "" {
		version = built
	}
	if version != built {
		return &exitError{code: 14, reason: "K8S_UNAVAILABLE", msg: fmt.Sprintf(
			"this node's components are Kubernetes %s; --kubernetes-version=%s cannot run here (the module pins %s)", built, version, built)}
	}
	machine := o.paths.machine(o.profile)
	if st, err := node.ReadState(machine); err == nil && st.Running() {
		prof, err := o.paths.readProfile(o.profile)
		if err == nil && (!extraGiven || len(changedOptions(prof.ExtraConfig, extra)) == 0) {
			fmt.Fprintf(o.out, "* Updating the running %q cluster ...\n* Done! kubectl is now configured to use %q cluster and \"default\" namespace by default\n", o.profile, o.profile)
			return nil
		}
		return usage("the running %q cluster has other --extra-config values: run \"minikube stop\" first (this minikube does not reconfigure a running node; a stopped one restarts with new kubelet flags)", o.profile)
	}
	restart := false
	if _, err := os.Stat(filepath.Join(machine, "upper", "etc", "kubernetes", "admin.conf")); err == nil {
		restart = true // a stopped node: its files and etcd's data are kept, as minikube's /var volume
	}
	if restart {
		prof, err := o.paths.readProfile(o.profile)
		if err != nil {
			return err
		}
		// minikube keeps a profile's --extra-config unless the flag is given again, and then
		// takes the flag's values instead (cmd/minikube/cmd/start_flags.go,
		// updateExistingConfigFromFlags: `if cmd.Flags().Changed("extra-config")`; minikube PR
		// #9634). The restarted node gets a new kubelet drop-in with them (bootstrapper/kubeadm,
		// UpdateNode), so kubelet flags change on restart here as there. What minikube changes
		// by running kubeadm's phases again (restartPrimaryControlPlane) — the control plane's
		// arguments, the kubelet's configuration file — this node does not redo: those need a
		// new cluster.
		if !extraGiven {
			extra = prof.ExtraConfig
		} else if changed := changedOptions(prof.ExtraConfig, extra); len(changed) > 0 {
			for _, c := range changed {
				if c.Component != "kubelet" || kubeletConfigFileKeys[c.Key] {
					return usage("the stopped %q cluster cannot take --extra-config=%s here (this minikube changes only kubelet flags on restart; %s needs kubeadm's phases again): run \"minikube delete\" first", o.profile, c, c.Component)
				}
			}
		}
	}

	fmt.Fprintf(o.out, "* kubelet-walkthrough's minikube: a node in namespaces of this machine (systemd, containerd, kubeadm; no Docker)\n")
	fmt.Fprintf(o.out, "* Starting %q primary control-plane node in %q cluster\n", o.profile, o.profile)
	if restart {
		fmt.Fprintf(o.out, "* Restarting existing docker container for %q ...\n", o.profile)
	}
	fmt.Fprintf(o.out, "* Preparing Kubernetes %s on containerd ...\n", version)
	for _, e := range extra {
		fmt.Fprintf(o.out, "  - %s\n", e)
	}
	started := time.Now()
	n, err := node.Start(ctx, node.Options{
		Dir: machine, Rootfs: filepath.Join(o.components, "rootfs"), Components: o.components,
		KubernetesVersion: version, Hostname: o.profile, ExtraConfig: extra, Restart: restart,
	})
	if err != nil {
		return err
	}
	if err := o.paths.writeProfile(&profileConfig{Name: o.profile, KubernetesVersion: version, ExtraConfig: extra, NodeIP: n.State.IP}); err != nil {
		return err
	}
	if restart {
		if err = n.WaitUntilReady(ctx); err == nil {
			err = o.waitForRestartedPods(ctx, n, started)
		}
	} else {
		fmt.Fprintf(o.out, "  - Generating certificates and keys ...\n  - Booting up control plane ...\n  - Configuring RBAC rules ...\n")
		fmt.Fprintf(o.out, "* Configuring bridge CNI (Container Networking Interface) ...\n")
		err = n.Bootstrap(ctx)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.out, "* Verifying Kubernetes components...\n")
	admin, err := n.AdminKubeconfig(ctx)
	if err != nil {
		return err
	}
	if _, err := o.paths.updateKubeconfig(o.profile, admin, "v1.37.0-walkthrough"); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "* Done! kubectl is now configured to use %q cluster and \"default\" namespace by default\n", o.profile)
	return nil
}

func (o *options) stopCommand(ctx context.Context) *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Stops a running local Kubernetes cluster",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			n, err := node.Open(o.paths.machine(o.profile))
			if errors.Is(err, os.ErrNotExist) {
				return o.notFound()
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "* Stopping node %q  ...\n", o.profile)
			if n.State.Running() {
				fmt.Fprintf(o.out, "* Powering off %q via SSH ...\n", o.profile)
			}
			if err := n.Stop(ctx); err != nil {
				return err
			}
			fmt.Fprintln(o.out, "* 1 node stopped.")
			return nil
		},
	}
}

func (o *options) deleteCommand(ctx context.Context) *cobra.Command {
	return &cobra.Command{
		Use:   "delete",
		Short: "Deletes a local Kubernetes cluster",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			machine := o.paths.machine(o.profile)
			if n, err := node.Open(machine); err == nil {
				fmt.Fprintf(o.out, "* Deleting %q in docker ...\n", o.profile)
				if err := n.Stop(ctx); err != nil {
					return err
				}
			}
			fmt.Fprintf(o.out, "* Removing %s ...\n", machine)
			for _, d := range []string{machine, o.paths.profile(o.profile)} {
				if err := os.RemoveAll(d); err != nil {
					return err
				}
			}
			if err := removeFromKubeconfig(o.profile); err != nil {
				return err
			}
			fmt.Fprintf(o.out, "* Removed all traces of the %q cluster.\n", o.profile)
			return nil
		},
	}
}

// statusCommand is `minikube status`: four states and a kubeconfig check, and an exit code
// whose bits say what is down (cmd/minikube/cmd/status.go, exitCode): 1 the host, 2 the
// kubelet or the apiserver, 4 the kubeconfig.
func (o *options) statusCommand(ctx context.Context) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Gets the status of a local Kubernetes cluster",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			n, err := node.Open(o.paths.machine(o.profile))
			if errors.Is(err, os.ErrNotExist) {
				return o.notFound()
			}
			if err != nil {
				return err
			}
			host, kubelet, apiserver, kubeconfig := "Stopped", "Stopped", "Stopped", "Stopped"
			if n.State.Running() {
				host = "Running"
				if out, _ := n.Output(ctx, "systemctl", "is-active", "kubelet"); strings.TrimSpace(string(out)) == "active" {
					kubelet = "Running"
				}
				apiserver = apiserverStatus(ctx, n.APIServer)
				kubeconfig = o.kubeconfigStatus(n.APIServer)
			}
			fmt.Fprintf(o.out, "%s\ntype: Control Plane\nhost: %s\nkubelet: %s\napiserver: %s\nkubeconfig: %s\n\n",
				o.profile, host, kubelet, apiserver, kubeconfig)
			code := 0
			if host != "Running" {
				code |= 1
			}
			if kubelet != "Running" || apiserver != "Running" {
				code |= 2
			}
			if kubeconfig != "Configured" {
				code |= 4
			}
			if code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}

// apiserverStatus asks the apiserver's /healthz, as minikube's status does.
func apiserverStatus(ctx context.Context, url string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		return "Error"
	}
	// Only whether it answers "ok" matters here, as for minikube's probe.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a health probe, no credentials
	resp, err := client.Do(req)
	if err != nil {
		return "Stopped"
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusOK {
		return "Running"
	}
	return "Error"
}

// kubeconfigStatus says whether the user's kubeconfig points at this cluster.
func (o *options) kubeconfigStatus(server string) string {
	path, err := kubeconfigPath()
	if err != nil {
		return "Misconfigured"
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "Misconfigured"
	}
	if c, ok := cfg.Clusters[o.profile]; ok && c.Server == server {
		return "Configured"
	}
	return "Misconfigured"
}

// kubeletConfigFileKeys are the kubelet keys minikube writes into the KubeletConfiguration
// instead of the command line (bsutil/kubelet.go, kubeletConfigParams; node.ExtraConfig routes
// them the same way).
var kubeletConfigFileKeys = map[string]bool{"localStorageCapacityIsolation": true, "runtime-request-timeout": true,
	"hairpin-mode": true, "container-runtime-endpoint": true}

// changedOptions are the options in one list and not in the other.
func changedOptions(old, updated node.ExtraConfig) node.ExtraConfig {
	var out node.ExtraConfig
	for _, o := range old {
		if !slices.Contains(updated, o) {
			out = append(out, o)
		}
	}
	for _, u := range updated {
		if !slices.Contains(old, u) {
			out = append(out, u)
		}
	}
	return out
}

// waitForRestartedPods waits, after a restart, until kube-system's pods run again in containers
// started since: right after the node comes back, the apiserver still holds the statuses the
// kubelet posted before the stop — Ready, of containers that no longer exist. minikube waits
// for the apiserver and the system pods the same way after a restart (`--wait`, kverify).
func (o *options) waitForRestartedPods(ctx context.Context, n *node.Node, since time.Time) error {
	admin, err := n.AdminKubeconfig(ctx)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*admin, nil).ClientConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	since = since.Add(-time.Second).Truncate(time.Second) // startedAt has seconds only
	var waiting []string
	for {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
		if err == nil {
			waiting = waiting[:0]
			for _, p := range pods.Items {
				if !restartedAndReady(p, since) {
					waiting = append(waiting, p.Name)
				}
			}
			if len(pods.Items) > 0 && len(waiting) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-system's pods to run again after the restart (still waiting for %v): %w", waiting, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// restartedAndReady says whether every container of p is ready and started after since.
func restartedAndReady(p corev1.Pod, since time.Time) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready || c.State.Running == nil || c.State.Running.StartedAt.Time.Before(since) {
			return false
		}
	}
	return true
}
