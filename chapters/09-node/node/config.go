package node

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// The files that make the node minikube's, written into this run's layer of the root file
// system before the node boots. Each says where minikube (or kicbase, or kubeadm) writes the
// same file; research notes with the sources: chapters/09-node/README.md.

// nodeFile is one file of the node: its content, or a symbolic link.
type nodeFile struct {
	path    string
	content string
	link    string
	mode    os.FileMode
}

// versionDir is where minikube keeps the Kubernetes binaries on the node
// (vmpath.GuestPersistentDir/binaries/<version>).
func versionDir(version string) string { return "/var/lib/minikube/binaries/" + version }

// nodeFiles lists the files of the node for these options.
func nodeFiles(opts Options, cfg *launch) ([]nodeFile, error) {
	v2 := CgroupV2()
	// minikube uses systemd's cgroup driver where the host is cgroup v2 and cgroupfs on a v1
	// host (pkg/minikube/node/start.go, cgroupDriver → detect.CgroupDriver).
	driver := "cgroupfs"
	if v2 {
		driver = "systemd"
	}
	data := map[string]any{
		"Hostname":      opts.Hostname,
		"NodeIP":        cfg.NodeIP,
		"GatewayIP":     cfg.GatewayIP,
		"Port":          cfg.APIServerPort,
		"Version":       opts.KubernetesVersion,
		"Binaries":      versionDir(opts.KubernetesVersion),
		"CgroupDriver":  driver,
		"SystemdCgroup": v2,
		"CgroupV1":      !v2,
		"KubeletFlags":  strings.Join(opts.ExtraConfig.kubeletFlags(opts.Hostname, cfg.NodeIP), " "),
		"Extra":         opts.ExtraConfig,
		"Pause":         pauseImage,
	}
	kubeletFields := map[string]string{
		"hairpinMode":              "hairpin-veth",
		"runtimeRequestTimeout":    "15m",
		"containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
	}
	maps.Copy(kubeletFields, opts.ExtraConfig.kubeletConfigFields())
	data["KubeletFields"] = kubeletFields
	podSubnet := "10.244.0.0/16"
	if v, ok := opts.ExtraConfig.values("kubeadm")["pod-network-cidr"]; ok {
		podSubnet = v
	}
	data["PodSubnet"] = podSubnet
	data["ExtraArgs"] = map[string]map[string]string{
		"apiServer":         withDefaults(opts.ExtraConfig.values("apiserver"), map[string]string{"enable-admission-plugins": "NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,DefaultTolerationSeconds,NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota"}),
		"controllerManager": withDefaults(opts.ExtraConfig.values("controller-manager"), map[string]string{"allocate-node-cidrs": "true", "leader-elect": "false"}),
		"scheduler":         withDefaults(opts.ExtraConfig.values("scheduler"), map[string]string{"leader-elect": "false"}),
		"etcd":              opts.ExtraConfig.values("etcd"),
	}
	data["KubeProxy"] = opts.ExtraConfig.values("kube-proxy")

	machineID := make([]byte, 16)
	if _, err := rand.Read(machineID); err != nil {
		return nil, err
	}
	files := []nodeFile{
		{path: "/etc/hostname", content: opts.Hostname + "\n"},
		// Each node its own machine ID, as each container of kicbase gets one.
		{path: "/etc/machine-id", content: hex.EncodeToString(machineID) + "\n", mode: 0o444},
		// minikube adds the control plane's alias and the host's name (machine.AddHostAlias).
		{path: "/etc/hosts", content: render(hostsTemplate, data)},
		{path: "/etc/containerd/config.toml", content: render(containerdTemplate, data)},
		{path: "/etc/systemd/system/containerd.service", content: containerdUnit},
		{path: "/etc/systemd/system/multi-user.target.wants/containerd.service", link: "/etc/systemd/system/containerd.service"},
		{path: "/lib/systemd/system/kubelet.service", content: render(kubeletUnitTemplate, data)},
		{path: "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf", content: render(kubeletDropInTemplate, data)},
		{path: "/etc/systemd/system/multi-user.target.wants/kubelet.service", link: "/lib/systemd/system/kubelet.service"},
		{path: "/etc/cni/net.d/1-k8s.conflist", content: render(bridgeCNITemplate, data)},
		{path: "/etc/crictl.yaml", content: "runtime-endpoint: unix:///run/containerd/containerd.sock\n"},
		{path: "/var/tmp/minikube/kubeadm.yaml", content: render(kubeadmTemplate, data), mode: 0o640},
		{path: "/etc/systemd/journald.conf.d/10-node.conf", content: "[Journal]\nStorage=volatile\nReadKMsg=no\n"},
	}
	for _, bin := range []string{"kubeadm", "kubelet", "kubectl"} {
		files = append(files, nodeFile{path: versionDir(opts.KubernetesVersion) + "/" + bin, link: componentsInNode + "/bin/" + bin})
	}
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "crictl", "runc"} {
		files = append(files, nodeFile{path: "/usr/local/bin/" + bin, link: componentsInNode + "/bin/" + bin})
	}
	entries, err := os.ReadDir(filepath.Join(opts.Components, "cni"))
	if err != nil {
		return nil, fmt.Errorf("CNI plugins: %w", err)
	}
	for _, e := range entries {
		files = append(files, nodeFile{path: "/opt/cni/bin/" + e.Name(), link: componentsInNode + "/cni/" + e.Name()})
	}
	// Units that would touch the machine rather than the node, or do nothing useful in it.
	for _, u := range []string{"sys-kernel-debug.mount", "sys-kernel-tracing.mount", "sys-kernel-config.mount",
		"sys-fs-fuse-connections.mount", "apt-daily.timer", "apt-daily-upgrade.timer", "dpkg-db-backup.timer",
		"e2scrub_all.timer", "e2scrub_reap.service", "getty@tty1.service", "console-getty.service"} {
		files = append(files, nodeFile{path: "/etc/systemd/system/" + u, link: "/dev/null"})
	}
	return files, nil
}

// writeNodeFiles writes the node's files into this run's layer of its root file system.
func writeNodeFiles(opts Options, cfg *launch) error {
	files, err := nodeFiles(opts, cfg)
	if err != nil {
		return err
	}
	upper := filepath.Join(cfg.Dir, "upper")
	for _, f := range files {
		// The file's directory as the root file system resolves it: Debian links /lib to
		// usr/lib, and a real /lib in this layer would hide the link.
		dir, err := securejoin.SecureJoin(cfg.Rootfs, filepath.Dir(f.path))
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(cfg.Rootfs, dir)
		if err != nil {
			return err
		}
		path := filepath.Join(upper, rel, filepath.Base(f.path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err // a restarted node gets this run's files
		}
		if f.link != "" {
			if err := os.Symlink(f.link, path); err != nil {
				return err
			}
			continue
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(path, []byte(f.content), mode); err != nil {
			return err
		}
	}
	return nil
}

func withDefaults(user, defaults map[string]string) map[string]string {
	out := maps.Clone(defaults)
	maps.Copy(out, user)
	return out
}

var funcs = template.FuncMap{
	"sorted": func(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) },
}

func render(t *template.Template, data any) string {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		panic(fmt.Sprintf("template %s: %v", t.Name(), err)) // the templates are ours: a bug
	}
	return b.String()
}

func mustTemplate(name, text string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).Parse(text))
}

// pauseImage is the sandbox image kubeadm v1.37 asks for (constants.PauseVersion).
const pauseImage = "registry.k8s.io/pause:3.10.2"

var hostsTemplate = mustTemplate("hosts", `127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
{{.NodeIP}}	{{.Hostname}}
{{.GatewayIP}}	host.minikube.internal
{{.NodeIP}}	control-plane.minikube.internal
`)

// containerd's configuration (version 3, containerd 2.x). restrict_oom_score_adj: a container
// may not get a lower OOM score adjustment than containerd's own, as in a rootless or nested
// container — this machine refuses a negative oom_score_adj to the node.
var containerdTemplate = mustTemplate("containerd", `version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '{{.Pause}}'

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = '/usr/local/bin/runc'
  SystemdCgroup = {{.SystemdCgroup}}

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ['/opt/cni/bin']
  conf_dir = '/etc/cni/net.d'
`)

// containerd's own unit file (containerd.service in its repository).
const containerdUnit = `[Unit]
Description=containerd container runtime
Documentation=https://containerd.io
After=network.target dbus.service

[Service]
ExecStart=/usr/local/bin/containerd
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
`

// The kubelet's unit and minikube's drop-in (bsutil/ktmpl/kubelet.go: KubeletServiceTemplate,
// KubeletSystemdTemplate; written to /lib/systemd/system/kubelet.service and
// /etc/systemd/system/kubelet.service.d/10-kubeadm.conf).
var kubeletUnitTemplate = mustTemplate("kubelet.service", `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=http://kubernetes.io/docs/

[Service]
ExecStart={{.Binaries}}/kubelet
Restart=always
StartLimitInterval=0
# Tuned for local dev: faster than upstream default (10s), but slower than systemd default (100ms)
RestartSec=600ms

[Install]
WantedBy=multi-user.target
`)

var kubeletDropInTemplate = mustTemplate("10-kubeadm.conf", `[Unit]
Wants=containerd.service

[Service]
ExecStart=
ExecStart={{.Binaries}}/kubelet {{.KubeletFlags}}

[Install]
`)

// minikube's bridge CNI configuration (pkg/minikube/cni/bridge.go, /etc/cni/net.d/1-k8s.conflist),
// without its "firewall" plugin, which is not built here.
var bridgeCNITemplate = mustTemplate("1-k8s.conflist", `{
  "cniVersion": "0.4.0",
  "name": "bridge",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "bridge",
      "addIf": "true",
      "isDefaultGateway": true,
      "forceAddress": false,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "subnet": "{{.PodSubnet}}"
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}
`)

// kubeadm's configuration as minikube writes it for containerd and Kubernetes ≥ 1.31
// (bsutil/ktmpl/v1beta4.go, rendered as bsutil/testdata/v1.35/containerd.yaml), with two
// differences where this machine is not minikube's: the cgroup driver follows the host as
// minikube's own detection does, and on a cgroup v1 host failCgroupV1 is false (the kubelet
// v1.37 refuses cgroup v1 otherwise).
var kubeadmTemplate = mustTemplate("kubeadm.yaml", `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: {{.NodeIP}}
  bindPort: {{.Port}}
bootstrapTokens:
  - groups:
      - system:bootstrappers:kubeadm:default-node-token
    ttl: 24h0m0s
    usages:
      - signing
      - authentication
nodeRegistration:
  criSocket: unix:///run/containerd/containerd.sock
  name: "{{.Hostname}}"
  kubeletExtraArgs:
    - name: "node-ip"
      value: "{{.NodeIP}}"
  taints: []
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
apiServer:
  certSANs: ["127.0.0.1", "localhost", "{{.NodeIP}}"]
{{- with .ExtraArgs.apiServer}}
  extraArgs:
{{- range $k := sorted .}}
    - name: "{{$k}}"
      value: "{{index $.ExtraArgs.apiServer $k}}"
{{- end}}
{{- end}}
controllerManager:
  extraArgs:
{{- range $k := sorted .ExtraArgs.controllerManager}}
    - name: "{{$k}}"
      value: "{{index $.ExtraArgs.controllerManager $k}}"
{{- end}}
scheduler:
  extraArgs:
{{- range $k := sorted .ExtraArgs.scheduler}}
    - name: "{{$k}}"
      value: "{{index $.ExtraArgs.scheduler $k}}"
{{- end}}
certificatesDir: /var/lib/minikube/certs
clusterName: mk
controlPlaneEndpoint: control-plane.minikube.internal:{{.Port}}
etcd:
  local:
    dataDir: /var/lib/minikube/etcd
{{- with .ExtraArgs.etcd}}
    extraArgs:
{{- range $k := sorted .}}
      - name: "{{$k}}"
        value: "{{index $.ExtraArgs.etcd $k}}"
{{- end}}
{{- end}}
kubernetesVersion: {{.Version}}
networking:
  dnsDomain: cluster.local
  podSubnet: "{{.PodSubnet}}"
  serviceSubnet: 10.96.0.0/12
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  x509:
    clientCAFile: /var/lib/minikube/certs/ca.crt
cgroupDriver: {{.CgroupDriver}}
{{- range $k := sorted .KubeletFields}}
{{$k}}: {{index $.KubeletFields $k}}
{{- end}}
clusterDomain: "cluster.local"
# disable disk resource management by default
imageGCHighThresholdPercent: 100
evictionHard:
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
failSwapOn: false
{{- if .CgroupV1}}
# not minikube's: this host is cgroup v1, which the kubelet v1.37 refuses by default
failCgroupV1: false
{{- end}}
staticPodPath: /etc/kubernetes/manifests
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clusterCIDR: "{{.PodSubnet}}"
metricsBindAddress: 0.0.0.0:10249
conntrack:
  maxPerCore: 0
# Skip setting "net.netfilter.nf_conntrack_tcp_timeout_established"
  tcpEstablishedTimeout: 0s
# Skip setting "net.netfilter.nf_conntrack_tcp_timeout_close"
  tcpCloseWaitTimeout: 0s
{{- range $k := sorted .KubeProxy}}
{{$k}}: "{{index $.KubeProxy $k}}"
{{- end}}
`)
