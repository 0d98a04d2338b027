package realkubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	probetest "k8s.io/kubernetes/pkg/kubelet/prober/testing"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	"k8s.io/kubernetes/pkg/util/oom"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/configmap"
	"k8s.io/kubernetes/pkg/volume/csi"
	"k8s.io/kubernetes/pkg/volume/downwardapi"
	"k8s.io/kubernetes/pkg/volume/emptydir"
	"k8s.io/kubernetes/pkg/volume/hostpath"
	"k8s.io/kubernetes/pkg/volume/projected"
	"k8s.io/kubernetes/pkg/volume/secret"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
	"k8s.io/mount-utils"
)

// The hollow node: a real kubelet whose configuration and dependencies replace what a laptop lacks
// — a container runtime, cAdvisor, cgroups, mounts — with the stand-ins the kubelet's own packages
// provide for tests. Kubernetes' scale-test tool kubemark assembled the same node until v1.38
// removed it; this file assembles it from the parts that remain.

// hollowConfig is the kubelet's flags and configuration for a hollow node rooted at rootDir: the
// kubelet's defaults (options.NewKubeletFlags, options.NewKubeletConfiguration: what a kubelet
// started with no flags and no file would run with) with these changes. configure then sets what
// Options ask for.
func hollowConfig(nodeName, rootDir string, securePort, readOnlyPort int) (*options.KubeletFlags, *kubeletconfig.KubeletConfiguration, error) {
	f := options.NewKubeletFlags()
	f.RootDirectory = rootDir
	f.HostnameOverride = nodeName
	// Dead containers kept a minute, two per container and 100 in all (the kubelet's defaults: none
	// kept by age, one per container, no global limit).
	f.MinimumGCAge = metav1.Duration{Duration: time.Minute}
	f.MaxContainerCount = 100
	f.MaxPerPodContainerCount = 2

	c, err := options.NewKubeletConfiguration()
	if err != nil {
		return nil, nil, fmt.Errorf("the kubelet's default configuration: %w", err)
	}
	// The fake runtime listens here (dependencies starts it): /configz tells the truth.
	c.ContainerRuntimeEndpoint = "unix://" + filepath.Join(rootDir, "cri.sock")
	c.PodLogsDir = filepath.Join(rootDir, "pod-logs")
	c.Port = int32(securePort)
	c.ReadOnlyPort = int32(readOnlyPort)
	// Every pod re-synced every 10 s, not every minute: a reader sees a change within seconds.
	c.SyncFrequency.Duration = 10 * time.Second
	// No cgroups of its own: the stub container manager makes none, and a normal user could not.
	c.CgroupsPerQOS = false
	// Volumes are attached by the kubelet, not by a controller-manager's attach-detach controller,
	// which no cluster of these chapters runs.
	c.EnableControllerAttachDetach = false
	c.ImageGCHighThresholdPercent = 90
	c.ClusterDNS = []string{}
	return f, c, nil
}

// hollowRootDir makes the kubelet's root directory, hollow-kubelet.N with its pod-logs directory,
// in this program's temporary directory (os.TempDir: TMPDIR where it is set), so that a run given
// a temporary directory of its own — each of make test's stages is — keeps everything there and
// can check that nothing was left. The kubelet listens on unix sockets inside its root directory,
// whose paths may not be longer than 107 bytes: when TMPDIR is too long for them, it is made in
// /tmp.
func hollowRootDir(logger klog.Logger) (string, error) {
	parent := os.TempDir()
	// The longest socket path under the root directory: device-plugins/kubelet.sock, and
	// os.MkdirTemp's random suffix is at most 10 digits.
	if n := len(filepath.Join(parent, "hollow-kubelet.0123456789", "device-plugins", "kubelet.sock")); n > maxSocketPath {
		logger.V(1).Info("TMPDIR is too long for the kubelet's sockets; its root directory goes to /tmp", "TMPDIR", parent)
		parent = "/tmp"
	}
	root, err := os.MkdirTemp(parent, "hollow-kubelet.")
	if err != nil {
		return "", fmt.Errorf("make the kubelet's root directory: %w", err)
	}
	if err := os.Mkdir(filepath.Join(root, "pod-logs"), 0o750); err != nil {
		_ = os.RemoveAll(root)
		return "", fmt.Errorf("make the kubelet's pod log directory: %w", err)
	}
	return root, nil
}

// maxSocketPath is the longest path a unix socket may have on Linux (sun_path, 108 bytes with
// its terminating NUL).
const maxSocketPath = 107

// hollowDependencies are the kubelet's Dependencies for a hollow node: the CRI services given
// (the fake runtime's), cAdvisor's testing.Fake (a machine of one core and 3.75 GiB), the stub
// container manager, a probe manager that runs no probe and reports every container ready, the
// OS, mounter and OOM adjuster's fakes, a FakeRecorder for events (the real recorder would start
// the OOM watcher, which reads the kernel's log, /dev/kmsg), and the volume plugins pods of these
// chapters use. A nil client leaves the kubelet standalone. What the kubelet builds itself when a
// dependency is nil — the TLS options, authentication — Start adds.
func hollowDependencies(nodeName string, client, heartbeatClient *clientset.Clientset,
	runtimeService internalapi.RuntimeService, imageService internalapi.ImageManagerService) *kubelet.Dependencies {
	deps := &kubelet.Dependencies{
		ProbeManager:             probetest.FakeManager{},
		RemoteRuntimeService:     runtimeService,
		RemoteImageService:       imageService,
		CAdvisorInterface:        &cadvisortest.Fake{NodeName: nodeName},
		OSInterface:              &containertest.FakeOS{},
		ContainerManager:         cm.NewStubContainerManager(),
		VolumePlugins:            hollowVolumePlugins(),
		OOMAdjuster:              oom.NewFakeOOMAdjuster(),
		Mounter:                  &mount.FakeMounter{},
		Subpather:                &subpath.FakeSubpath{},
		HostUtil:                 hostutil.NewFakeHostUtil(nil),
		PodStartupLatencyTracker: kubeletutil.NewPodStartupLatencyTracker(),
		// The kubelet binary makes it with run's logger; here it is made before there is one.
		NodeStartupLatencyTracker: kubeletutil.NewNodeStartupLatencyTracker(klog.TODO()),
		TracerProvider:            noopoteltrace.NewTracerProvider(),
		Recorder:                  &record.FakeRecorder{},
	}
	// The kubelet tests the interface against nil: a typed nil *Clientset would not be standalone.
	if client != nil {
		deps.KubeClient = client
	}
	if heartbeatClient != nil {
		deps.HeartbeatClient = heartbeatClient
	}
	return deps
}

// hollowVolumePlugins are the volume plugins of pods on a node with no storage of its own: a pod's
// own directories (emptyDir), the node's (hostPath, whose fake creates nothing on this machine),
// what the apiserver holds (secret, configMap, downwardAPI, projected), and CSI, which with an
// apiserver keeps the Node from Ready until it has written the node's CSINode, as on every node. Network and block storage (NFS, iSCSI, FC, local volumes)
// and gitRepo, which runs git on the node, have no place on it.
func hollowVolumePlugins() []volume.VolumePlugin {
	var plugins []volume.VolumePlugin
	plugins = append(plugins, emptydir.ProbeVolumePlugins()...)
	plugins = append(plugins, hostpath.FakeProbeVolumePlugins(volume.VolumeConfig{})...)
	plugins = append(plugins, secret.ProbeVolumePlugins()...)
	plugins = append(plugins, configmap.ProbeVolumePlugins()...)
	plugins = append(plugins, downwardapi.ProbeVolumePlugins()...)
	plugins = append(plugins, projected.ProbeVolumePlugins()...)
	plugins = append(plugins, csi.ProbeVolumePlugins()...)
	return plugins
}
