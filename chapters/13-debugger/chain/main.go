// Command kubelet-chain is the program chapter 13 stops in Delve: the kubelet binary's own main
// (cmd/kubelet/kubelet.go) with its arguments chosen so that the real chain — NewKubeletCommand,
// the command's RunE, Run, run, RunKubelet, createAndInitKubelet, NewMainKubelet, startKubelet,
// (*Kubelet).Run — runs as a normal user, with no container runtime and nothing listening on a
// port. It is not meant to run alone: `go run ./chapters/13-debugger` builds it, starts it under
// Delve and steps it (README.md).
//
// One of run's steps cannot run unprivileged: cm.NewContainerManager wants
// /var/lib/kubelet/device-plugins, a path fixed in the kubelet's device plugin API
// (pluginapi.KubeletSocket), and, as root, would leave it there. run builds the container
// manager and cAdvisor only when its Dependencies have none; RunE gives it none. So at run's
// first line Delve calls hollowReplacements (below) in this process, as a reader would type
// `call main.hollowReplacements(kubeDeps)`: the Dependencies then hold the hollow node's
// replacements, as chapter 04's, and run skips the two steps.
//
// Usage: kubelet-chain DIR, where DIR is an empty directory the caller made and removes.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/cli"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/pkg/kubelet"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// NodeName is the name the chain's kubelet gives itself (--hostname-override).
const NodeName = "debug-chain"

func main() {
	command := NewChainCommand(context.Background())
	code := cli.Run(command)
	os.Exit(code)
}

// NewChainCommand is the kubelet's own command, app.NewKubeletCommand, with its arguments set:
// the program's one argument is the directory to run in. Before the kubelet's RunE, it checks that
// Delve runs it, and starts a fake CRI runtime behind a real gRPC socket, as chapter 04's hollow
// node does (chapters/04-runkubelet/realkubelet/hollow.go): run's PreInitRuntimeService connects
// to it as to containerd.
func NewChainCommand(ctx context.Context) *cobra.Command {
	command := app.NewKubeletCommand(ctx)
	dir := ""
	if len(os.Args) == 2 {
		dir = os.Args[1]
	}
	command.SetArgs(KubeletArgs(dir))
	command.PreRunE = func(*cobra.Command, []string) error {
		if dir == "" {
			return fmt.Errorf("usage: kubelet-chain DIR (go run ./chapters/13-debugger runs it under Delve)")
		}
		if err := underDebugger(); err != nil {
			return err
		}
		if err := dieWithParent(); err != nil {
			return err
		}
		endpoint := "unix://" + filepath.Join(dir, "cri.sock")
		if err := fakeremote.NewFakeRemoteRuntime().Start(endpoint); err != nil {
			return fmt.Errorf("start the fake CRI runtime: %w", err)
		}
		return os.WriteFile(filepath.Join(dir, "kubelet.yaml"), []byte(Config(dir, endpoint)), 0o600)
	}
	return command
}

// KubeletArgs are the kubelet's command line for a chain under dir, as a kubelet on a node is
// started: a configuration file and the three flags that have no place in it.
func KubeletArgs(dir string) []string {
	return []string{
		"--config=" + filepath.Join(dir, "kubelet.yaml"),
		"--hostname-override=" + NodeName,
		"--root-dir=" + filepath.Join(dir, "root"),
		"--cert-dir=" + filepath.Join(dir, "root", "pki"),
	}
}

// Config is the chain's KubeletConfiguration: standalone (no --kubeconfig, so no webhook to ask),
// nothing listening on a port (the secure server off, the read-only and healthz ports 0), no
// cgroups of its own, nothing this user may not do (no swap check, no cgroup v1 refusal, its
// OOM score left alone, no iptables chains), and the fake runtime's socket.
func Config(dir, endpoint string) string {
	return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: ` + endpoint + `
volumePluginDir: ` + filepath.Join(dir, "volume-plugins") + `
address: 127.0.0.1
enableServer: false
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
oomScoreAdj: 0
makeIPTablesUtilChains: false
`
}

// hollowReplacements gives run's Dependencies what chapter 04's hollow node gives the kubelet:
// cAdvisor's testing.Fake, the stub container manager, and a FakeRecorder for events — with it
// NewMainKubelet skips the OOM watcher, which reads the kernel's log (/dev/kmsg), closed to a
// normal user where kernel.dmesg_restrict is 1 (Debian's and Ubuntu's default). Delve calls it at
// run's first line.
//
//go:noinline
func hollowReplacements(kubeDeps *kubelet.Dependencies) {
	kubeDeps.CAdvisorInterface = &cadvisortest.Fake{NodeName: NodeName}
	kubeDeps.ContainerManager = cm.NewStubContainerManager()
	kubeDeps.Recorder = &record.FakeRecorder{}
}

// ReplacementsFunc is hollowReplacements' name as Delve knows it; naming it here also keeps the
// function, which only Delve calls, in the binary.
var ReplacementsFunc = runtime.FuncForPC(reflect.ValueOf(hollowReplacements).Pointer()).Name()

// underDebugger refuses to run without a tracer (Linux's TracerPid): without Delve's call at
// run's first line, run would build the real container manager — as a normal user it fails, as
// root it writes /var/lib/kubelet.
func underDebugger() error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("kubelet-chain runs on Linux, under Delve (go run ./chapters/13-debugger): %w", err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if pid, ok := strings.CutPrefix(line, "TracerPid:"); ok && strings.TrimSpace(pid) != "0" {
			return nil
		}
	}
	return fmt.Errorf("kubelet-chain runs under Delve, which calls %s at run's first line: go run ./chapters/13-debugger", ReplacementsFunc)
}
