package node

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ExtraConfig is minikube's --extra-config=component.key=value, parsed and routed as minikube
// routes it (pkg/minikube/config/extra_options.go, ExtraOptionSlice.Set;
// pkg/minikube/bootstrapper/bsutil/kubelet.go, extraKubeletOpts; bsutil/kubeadm.go,
// GenerateKubeadmYAML; bsutil/extraconfig.go, KubeadmExtraArgsAllowed): a kubelet key becomes a
// kubelet flag on the unit's command line — whatever it is, so a key the kubelet does not know
// fails when the kubelet starts, as it does on minikube — except the few keys minikube writes
// into the KubeletConfiguration; apiserver, controller-manager, scheduler and etcd keys become
// extraArgs of kubeadm's ClusterConfiguration; kube-proxy keys fields of its configuration;
// kubeadm keys flags of `kubeadm init`, or the pod network.
type ExtraConfig []ExtraOption

// ExtraOption is one --extra-config value.
type ExtraOption struct {
	Component, Key, Value string
}

func (o ExtraOption) String() string { return o.Component + "." + o.Key + "=" + o.Value }

// Components minikube accepts, in the order its error message lists them
// (cmd/minikube/cmd/start.go, validateFlags).
var extraConfigComponents = []string{"apiserver", "controller-manager", "scheduler", "etcd", "kubeadm", "kubelet", "kube-proxy"}

// kubeadmFlags are the kubeadm keys minikube passes to `kubeadm init` as flags
// (bsutil/extraconfig.go, KubeadmExtraArgsAllowed[KubeadmCmdParam]).
var kubeadmFlags = []string{"ignore-preflight-errors", "dry-run", "kubeconfig", "kubeconfig-dir", "node-name",
	"cri-socket", "experimental-upload-certs", "certificate-key", "rootfs", "skip-phases"}

// kubeletConfigKeys are the kubelet keys minikube puts into the KubeletConfiguration instead of
// the command line (bsutil/kubelet.go, kubeletConfigParams; container-runtime-endpoint for
// Kubernetes ≥ 1.27), with the field each sets.
var kubeletConfigKeys = map[string]string{
	"localStorageCapacityIsolation": "localStorageCapacityIsolation",
	"runtime-request-timeout":       "runtimeRequestTimeout",
	"hairpin-mode":                  "hairpinMode",
	"container-runtime-endpoint":    "containerRuntimeEndpoint",
}

// Set parses one value as minikube does: the component up to the first dot, the key up to the
// first equal sign after it; the value may hold dots and equal signs.
func (c *ExtraConfig) Set(value string) error {
	component, rest, ok := strings.Cut(value, ".")
	if !ok {
		return fmt.Errorf("invalid value: must contain at least one period: %q", value)
	}
	key, v, ok := strings.Cut(rest, "=")
	if !ok {
		return fmt.Errorf("invalid value: must contain one equal sign: %q", value)
	}
	*c = append(*c, ExtraOption{Component: component, Key: key, Value: v})
	return nil
}

func (c *ExtraConfig) String() string {
	var s []string
	for _, o := range *c {
		s = append(s, o.String())
	}
	return strings.Join(s, ",")
}

// Type is for pflag.
func (c *ExtraConfig) Type() string { return "ExtraOption" }

// Validate refuses what minikube refuses before it creates anything: an unknown component, or
// a kubeadm key it does not pass on.
func (c ExtraConfig) Validate() error {
	var invalid []string
	for _, o := range c {
		if !slices.Contains(extraConfigComponents, o.Component) {
			invalid = append(invalid, o.String())
		}
	}
	if len(invalid) > 0 {
		return fmt.Errorf("these --extra-config parameters are invalid: %v; valid components are: %v", invalid, extraConfigComponents)
	}
	for _, o := range c {
		if o.Component == "kubeadm" && o.Key != "pod-network-cidr" && !slices.Contains(kubeadmFlags, o.Key) {
			return fmt.Errorf("sorry, the kubeadm.%s parameter is currently not supported by --extra-config", o.Key)
		}
	}
	return nil
}

// values returns the last value of each key of component (minikube's AsMap keeps the last).
func (c ExtraConfig) values(component string) map[string]string {
	m := map[string]string{}
	for _, o := range c {
		if o.Component == component {
			m[o.Key] = o.Value
		}
	}
	return m
}

// kubeletFlags are the kubelet's command-line flags as minikube builds them: its defaults, the
// node's name and IP unless the user set them, and every user key not bound for the
// configuration file, sorted by key.
func (c ExtraConfig) kubeletFlags(hostname, nodeIP string) []string {
	flags := map[string]string{
		"bootstrap-kubeconfig": "/etc/kubernetes/bootstrap-kubelet.conf",
		"config":               "/var/lib/kubelet/config.yaml",
		"kubeconfig":           "/etc/kubernetes/kubelet.conf",
		"hostname-override":    hostname,
		"node-ip":              nodeIP,
	}
	for k, v := range c.values("kubelet") {
		if _, inFile := kubeletConfigKeys[k]; !inFile {
			flags[k] = v
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		out = append(out, "--"+k+"="+flags[k])
	}
	return out
}

// kubeletConfigFields are the KubeletConfiguration fields the user's kubelet keys set.
func (c ExtraConfig) kubeletConfigFields() map[string]string {
	fields := map[string]string{}
	for k, v := range c.values("kubelet") {
		if field, ok := kubeletConfigKeys[k]; ok {
			fields[field] = v
		}
	}
	return fields
}

// kubeadmInitFlags are the flags the user's kubeadm keys add to `kubeadm init`, sorted.
func (c ExtraConfig) kubeadmInitFlags() []string {
	var out []string
	values := c.values("kubeadm")
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if slices.Contains(kubeadmFlags, k) {
			out = append(out, "--"+k+"="+values[k])
		}
	}
	return out
}
