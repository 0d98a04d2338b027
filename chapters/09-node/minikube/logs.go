package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// logsCommand is `minikube logs`: sections in name order, each `==> NAME <==` and what the
// node prints for it (pkg/minikube/logs/logs.go, Output; bootstrapper/kubeadm LogCommands):
// container status, containerd's and the kubelet's journals, each control-plane container's
// log, describe nodes, dmesg, kernel. minikube's "Audit" and "Last Start" sections, from its
// own history files, have no counterpart here.
func (o *options) logsCommand(ctx context.Context) *cobra.Command {
	var lines int
	var file string
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Returns logs to debug a local Kubernetes cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := o.running()
			if err != nil {
				return err
			}
			out := o.out
			if file != "" {
				f, err := os.Create(file)
				if err != nil {
					return err
				}
				defer func() { _ = f.Close() }()
				out = f
			}
			prof, err := o.paths.readProfile(o.profile)
			if err != nil {
				return err
			}
			n2 := strconv.Itoa(lines)
			bin := "/var/lib/minikube/binaries/" + prof.KubernetesVersion
			sections := map[string]string{
				"container status": "sudo `which crictl || echo crictl` ps -a || sudo docker ps -a",
				"containerd":       "sudo journalctl -u containerd -n " + n2,
				"kubelet":          "sudo journalctl -u kubelet -n " + n2,
				"describe nodes":   "sudo " + bin + "/kubectl describe nodes --kubeconfig=/etc/kubernetes/admin.conf",
				"dmesg":            "sudo dmesg -PH -L=never --level warn,err,crit,alert,emerg | tail -n " + n2,
				"kernel":           "uptime && uname -a && grep PRETTY /etc/os-release",
			}
			// Every container, exited ones too, of the components minikube shows.
			data, _ := n.Output(ctx, "crictl", "ps", "-a", "-o", "json")
			var list struct {
				Containers []struct {
					ID       string                `json:"id"`
					Metadata struct{ Name string } `json:"metadata"`
				} `json:"containers"`
			}
			_ = json.Unmarshal(data, &list)
			for _, c := range list.Containers {
				if slices.Contains([]string{"coredns", "etcd", "kube-apiserver", "kube-controller-manager", "kube-proxy", "kube-scheduler"}, c.Metadata.Name) {
					sections[fmt.Sprintf("%s [%s]", c.Metadata.Name, shortID(c.ID))] = "sudo /usr/local/bin/crictl logs --tail " + n2 + " " + c.ID
				}
			}
			var failed []string
			for i, name := range sortedKeys(sections) {
				if i > 0 {
					fmt.Fprintln(out)
				}
				fmt.Fprintf(out, "==> %s <==\n", name)
				c := n.CommandAs(ctx, "docker", "bash", "-c", sections[name])
				c.Stdout, c.Stderr = out, out
				if err := c.Run(); err != nil {
					failed = append(failed, name)
				}
			}
			if len(failed) > 0 {
				return &exitError{code: 1, msg: "! unable to fetch logs for: " + strings.Join(failed, ", ")}
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&lines, "length", "n", 60, "Number of lines back to go within the log")
	cmd.Flags().StringVar(&file, "file", "", "If present, writes to the provided file instead of stdout.")
	return cmd
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
