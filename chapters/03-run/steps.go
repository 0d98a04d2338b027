package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/coreos/go-systemd/v22/daemon"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/configz"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/features"
	kubeletconfigconversion "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	"k8s.io/kubernetes/pkg/kubelet/watchdog"
)

// outcome says what this chapter did with a step.
type outcome string

const (
	ran     outcome = "ran"     // executed here with the real function
	failed  outcome = "failed"  // executed here; the real kubelet would stop at this step
	skipped outcome = "skipped" // not safe or not possible here; see the note
	noop    outcome = "no-op"   // nothing to do for this configuration
)

// state is what the steps share, as run's locals do.
type state struct {
	server     *options.KubeletServer
	nodeName   string
	standalone bool
}

// step is one step of run: a name, where it is (a citation that the notes' checker verifies:
// the text in parentheses opens those lines, which end where a statement ends), and what this
// chapter does with it.
type step struct {
	name string
	cite string
	do   func(ctx context.Context, s *state) (outcome, string)
}

// lines is the citation's "server.go#La-Lb" part, for the table.
func (s step) lines() string {
	cite, _, _ := strings.Cut(s.cite, " ")
	return filepath.Base(cite)
}

var steps = []step{
	{"health checker (systemd watchdog)", "cmd/kubelet/app/server.go#L660-L665 (watchdog.NewHealthChecker(logger))", func(ctx context.Context, s *state) (outcome, string) {
		hc, err := watchdog.NewHealthChecker(klog.FromContext(ctx))
		if err != nil {
			return failed, err.Error()
		}
		hc.Start(ctx)
		if os.Getenv("WATCHDOG_USEC") == "" {
			return ran, "no systemd watchdog here (WATCHDOG_USEC unset): the checker idles"
		}
		return ran, "systemd watchdog configured: the checker pings it"
	}},
	{"feature gates from the configuration", "cmd/kubelet/app/server.go#L667-L673 (utilfeature.DefaultMutableFeatureGate.SetFromMap)", func(_ context.Context, s *state) (outcome, string) {
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(s.server.FeatureGates); err != nil {
			return failed, err.Error()
		}
		return ran, fmt.Sprintf("%d gates set by the file or flags; the rest keep their v1.37 defaults", len(s.server.FeatureGates))
	}},
	{"validate flags and configuration", "cmd/kubelet/app/server.go#L675-L677 (options.ValidateKubeletServer(s))", func(_ context.Context, s *state) (outcome, string) {
		if err := options.ValidateKubeletServer(s.server); err != nil {
			if strings.Contains(err.Error(), "cgroup v1") {
				return failed, "this host uses cgroup v1 and failCgroupV1 is true: the kubelet stops here (the walk goes on)"
			}
			return failed, err.Error()
		}
		return ran, "valid"
	}},
	{"MemoryQoS warnings", "cmd/kubelet/app/server.go#L680-L693 (features.MemoryQoS)", func(context.Context, *state) (outcome, string) {
		if !utilfeature.DefaultFeatureGate.Enabled(features.MemoryQoS) {
			return noop, "MemoryQoS gate off"
		}
		if !kubeletutil.IsCgroup2UnifiedMode() {
			return ran, "MemoryQoS gate on; this host uses cgroup v1: the kubelet warns that MemoryQoS needs cgroup v2"
		}
		return ran, "MemoryQoS gate on; this host uses cgroup v2: the kubelet checks the kernel version"
	}},
	{"lock file", "cmd/kubelet/app/server.go#L695-L710 (s.LockFilePath)", func(_ context.Context, s *state) (outcome, string) {
		if s.server.LockFilePath == "" {
			return noop, "no --lock-file"
		}
		return skipped, "would flock " + s.server.LockFilePath
	}},
	{"standalone mode?", "cmd/kubelet/app/server.go#L717-L720 (standaloneMode)", func(_ context.Context, s *state) (outcome, string) {
		s.standalone = s.server.KubeConfig == ""
		if s.standalone {
			return ran, "no --kubeconfig: standalone, no API client at all"
		}
		return ran, "--kubeconfig given: the kubelet will talk to an apiserver"
	}},
	{"dependencies (UnsecuredDependencies)", "cmd/kubelet/app/server.go#L722-L727 (if kubeDeps == nil {)", func(ctx context.Context, s *state) (outcome, string) {
		// The kubelet binary has built them already, in NewKubeletCommand's RunE.
		deps, err := app.UnsecuredDependencies(ctx, s.server, utilfeature.DefaultFeatureGate)
		if err != nil {
			return failed, err.Error()
		}
		return ran, fmt.Sprintf("%d volume plugins; a self-signed serving certificate written to %s",
			len(deps.VolumePlugins), filepath.Base(filepath.Dir(deps.TLSOptions.CertFile))+"/"+filepath.Base(deps.TLSOptions.CertFile))
	}},
	{"node name", "cmd/kubelet/app/server.go#L729-L733 (nodeutil.GetHostname)", func(_ context.Context, s *state) (outcome, string) {
		name, err := nodeutil.GetHostname(s.server.HostnameOverride)
		if err != nil {
			return failed, err.Error()
		}
		s.nodeName = name
		if s.server.HostnameOverride != "" {
			return ran, fmt.Sprintf("%q from --hostname-override", name)
		}
		return ran, fmt.Sprintf("this machine's hostname, lower-cased: [this host] %q", name)
	}},
	{"API clients", "cmd/kubelet/app/server.go#L735-L787 (if in standalone mode, indicate as much by setting all clients to nil)", func(_ context.Context, s *state) (outcome, string) {
		if s.standalone {
			return ran, "standalone: KubeClient, EventClient and HeartbeatClient set to nil"
		}
		return skipped, "would build three clients from " + s.server.KubeConfig + " (chapter 08 runs one against a real apiserver)"
	}},
	{"authentication and authorization (BuildAuth)", "cmd/kubelet/app/server.go#L789-L796 (if kubeDeps.Auth == nil {)", func(ctx context.Context, s *state) (outcome, string) {
		_, runCAReload, err := app.BuildAuth(nodeNameOf(s), nil, s.server.KubeletConfiguration)
		if err != nil {
			return failed, fmt.Sprintf("%v: a standalone kubelet needs authentication.webhook.enabled=false and authorization.mode=AlwaysAllow (chapter 04 sets them)", err)
		}
		runCAReload(ctx.Done())
		return ran, fmt.Sprintf("anonymous=%t, webhook=%t, authorization=%s",
			s.server.Authentication.Anonymous.Enabled, s.server.Authentication.Webhook.Enabled, s.server.Authorization.Mode)
	}},
	{"container runtime (PreInitRuntimeService)", "cmd/kubelet/app/server.go#L798-L800 (kubelet.PreInitRuntimeService)", func(_ context.Context, s *state) (outcome, string) {
		endpoint := s.server.ContainerRuntimeEndpoint
		if _, err := os.Stat(strings.TrimPrefix(endpoint, "unix://")); err != nil {
			return skipped, "no runtime at " + endpoint + " [this host]"
		}
		return skipped, "a runtime listens at " + endpoint + ", this chapter leaves it alone [this host]"
	}},
	{"CRI stats support check", "cmd/kubelet/app/server.go#L802-L811 (features.PodAndContainerStatsFromCRI)", func(context.Context, *state) (outcome, string) {
		return skipped, "asks the runtime for PodSandboxStats; chapter 04 gives the kubelet a fake CRI runtime"
	}},
	{"cgroup driver from the runtime", "cmd/kubelet/app/server.go#L814-L816 (getCgroupDriverFromCRI)", func(_ context.Context, s *state) (outcome, string) {
		return skipped, fmt.Sprintf("asks the runtime; without an answer the configured %q stays", s.server.CgroupDriver)
	}},
	{"/configz", "cmd/kubelet/app/server.go#L819-L822 (initConfigz)", func(_ context.Context, s *state) (outcome, string) {
		cz, err := configz.New("kubeletconfig")
		if err != nil {
			return failed, err.Error()
		}
		versioned := &kubeletconfigv1beta1.KubeletConfiguration{}
		if err := kubeletconfigconversion.Convert_config_KubeletConfiguration_To_v1beta1_KubeletConfiguration(&s.server.KubeletConfiguration, versioned, nil); err != nil {
			return failed, err.Error()
		}
		cz.Set(versioned)
		return ran, "the effective configuration registered for GET /configz"
	}},
	{"cgroup roots", "cmd/kubelet/app/server.go#L824-L842 (var cgroupRoots []string)", func(_ context.Context, s *state) (outcome, string) {
		root := cm.NodeAllocatableRoot(s.server.CgroupRoot, s.server.CgroupsPerQOS, s.server.CgroupDriver)
		return ran, fmt.Sprintf("pods go under %s (cgroupsPerQOS=%t, driver %s)", root, s.server.CgroupsPerQOS, s.server.CgroupDriver)
	}},
	{"cAdvisor", "cmd/kubelet/app/server.go#L844-L851 (if kubeDeps.CAdvisorInterface == nil {)", func(context.Context, *state) (outcome, string) {
		return skipped, "cadvisor.New watches every cgroup of the machine; chapter 04 uses cadvisor's testing.Fake"
	}},
	{"event recorder", "cmd/kubelet/app/server.go#L854 (makeEventRecorder(ctx, kubeDeps, nodeName))", func(_ context.Context, s *state) (outcome, string) {
		if s.standalone {
			return noop, "no apiserver: events only go to the log"
		}
		return skipped, "would send events to the apiserver"
	}},
	{"container manager (cgroups, eviction, QoS, resources)", "cmd/kubelet/app/server.go#L856-L970 (if kubeDeps.ContainerManager == nil {)", func(_ context.Context, s *state) (outcome, string) {
		thresholds, err := eviction.ParseThresholdConfig(nil, s.server.EvictionHard, nil, nil, nil)
		if err != nil {
			return failed, err.Error()
		}
		var hard []string
		for _, t := range thresholds {
			hard = append(hard, fmt.Sprintf("%s<%s", t.Signal, thresholdValue(t.Value.Quantity, t.Value.Percentage)))
		}
		sort.Strings(hard)
		return skipped, fmt.Sprintf("parsed hard eviction %s; cm.NewContainerManager needs root and cgroups (chapter 04: cm.NewStubContainerManager)", strings.Join(hard, ", "))
	}},
	{"startup latency trackers", "cmd/kubelet/app/server.go#L972-L978 (if kubeDeps.PodStartupLatencyTracker == nil {)", func(ctx context.Context, _ *state) (outcome, string) {
		_ = kubeletutil.NewPodStartupLatencyTracker()
		_ = kubeletutil.NewNodeStartupLatencyTracker(klog.FromContext(ctx))
		return ran, "pod and node startup trackers created"
	}},
	{"OOM score of the kubelet process", "cmd/kubelet/app/server.go#L981-L984 (oomAdjuster := kubeDeps.OOMAdjuster)", func(_ context.Context, s *state) (outcome, string) {
		return skipped, fmt.Sprintf("would write %d to this process's oom_score_adj; needs privileges", s.server.OOMScoreAdj)
	}},
	{"RunKubelet", "cmd/kubelet/app/server.go#L986-L988 (RunKubelet(ctx, s, kubeDeps))", func(context.Context, *state) (outcome, string) {
		return skipped, "chapter 04 runs it"
	}},
	{"healthz server", "cmd/kubelet/app/server.go#L990-L999 (if s.HealthzPort > 0 {)", func(_ context.Context, s *state) (outcome, string) {
		if s.server.HealthzPort <= 0 {
			return noop, "healthzPort 0"
		}
		return skipped, fmt.Sprintf("would listen on %s:%d", s.server.HealthzBindAddress, s.server.HealthzPort)
	}},
	{"tell systemd it is ready (sd_notify)", "cmd/kubelet/app/server.go#L1002 (daemon.SdNotify)", func(context.Context, *state) (outcome, string) {
		if os.Getenv("NOTIFY_SOCKET") == "" {
			sent, err := daemon.SdNotify(false, daemon.SdNotifyReady)
			if err == nil && !sent {
				return ran, "not under systemd (NOTIFY_SOCKET unset): nothing sent"
			}
		}
		return skipped, "NOTIFY_SOCKET is set: this chapter does not notify your systemd"
	}},
	{"wait for the context or the lock file", "cmd/kubelet/app/server.go#L1004-L1009 (select {)", func(context.Context, *state) (outcome, string) {
		return skipped, "the real run blocks here until the kubelet is told to stop"
	}},
}
