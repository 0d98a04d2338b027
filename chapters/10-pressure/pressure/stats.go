package pressure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/cadvisor/lib/model"
	"k8s.io/apimachinery/pkg/api/resource"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubelettypes "k8s.io/kubelet/pkg/types"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
)

// What the eviction manager reads, and where it comes from on a node
// (pkg/kubelet/server/stats/summary.go#L74-L133 (func (sp *summaryProviderImpl) Get)):
//
//   - memory.available is the root cgroup's: cAdvisor's ContainerInfoV2("/"), its memory limit
//     (the node's capacity) less its working set (pkg/kubelet/stats/helper.go#L75-L78
//     (if !isMemoryUnlimited(info.Spec.Memory.Limit) {)). nodeStats
//     answers it from the scenario.
//   - each pod's working set is its containers', which the CRI's ListContainerStats reports
//     (the kubelet's default stats provider asks the CRI for the containers and cAdvisor for
//     cgroups; this node has no cgroups of the pods to read, so the containers' numbers are the
//     pod's). statsRuntime answers it from the scenario, for the containers that run.
//
// Both count only the pods whose containers run: an evicted pod's memory comes back to the node.

// statsRuntime is the kubelet's CRI runtime service with ListContainerStats answered from the
// scenario, and the containers the kubelet stops ending as processes killed after their grace
// period do, with exit code 137 (the hollow node's fake runtime ends them with 0); every other call goes
// to the runtime.
type statsRuntime struct {
	internalapi.RuntimeService
	// usage is a pod's working set, by the runtime's labels (namespace and name).
	usage func(namespace, name string) resource.Quantity

	mu      sync.Mutex
	stopped map[string]bool
}

// killedExitCode is a process's exit code after SIGKILL: 128 + 9.
const killedExitCode = 137

// StopContainer stops the container, and notes it was killed.
func (r *statsRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	if err := r.RuntimeService.StopContainer(ctx, id, timeout); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped == nil {
		r.stopped = map[string]bool{}
	}
	r.stopped[id] = true
	return nil
}

// ContainerStatus is the runtime's, with the exit code of a container the kubelet killed.
func (r *statsRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	resp, err := r.RuntimeService.ContainerStatus(ctx, id, verbose)
	if err != nil || resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return resp, err
	}
	r.mu.Lock()
	killed := r.stopped[id]
	r.mu.Unlock()
	if killed {
		resp.Status.ExitCode, resp.Status.Reason = killedExitCode, "Error"
	}
	return resp, nil
}

// running lists the running containers and what each uses: a pod's working set shared among its
// running containers.
func (r *statsRuntime) running(ctx context.Context) ([]*runtimeapi.Container, map[string]uint64, error) {
	containers, err := r.RuntimeService.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, nil, err
	}
	byPod := map[string][]*runtimeapi.Container{}
	for _, c := range containers {
		uid := c.Labels[kubelettypes.KubernetesPodUIDLabel]
		byPod[uid] = append(byPod[uid], c)
	}
	uses := map[string]uint64{}
	for _, cs := range byPod {
		q := r.usage(cs[0].Labels[kubelettypes.KubernetesPodNamespaceLabel], cs[0].Labels[kubelettypes.KubernetesPodNameLabel])
		total := uint64(q.Value())
		for i, c := range cs {
			share := total / uint64(len(cs))
			if i == 0 {
				share += total % uint64(len(cs))
			}
			uses[c.Id] = share
		}
	}
	return containers, uses, nil
}

// ListContainerStats is what the kubelet's stats provider asks for every pod's containers.
func (r *statsRuntime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	containers, uses, err := r.running(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	var out []*runtimeapi.ContainerStats
	for _, c := range containers {
		if filter.GetId() != "" && filter.GetId() != c.Id || filter.GetPodSandboxId() != "" && filter.GetPodSandboxId() != c.PodSandboxId {
			continue
		}
		if !labelsMatch(filter.GetLabelSelector(), c.Labels) {
			continue
		}
		used := uses[c.Id]
		out = append(out, &runtimeapi.ContainerStats{
			Attributes: &runtimeapi.ContainerAttributes{Id: c.Id, Metadata: c.Metadata, Labels: c.Labels, Annotations: c.Annotations},
			Cpu:        &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}},
			Memory: &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{Value: used},
				UsageBytes: &runtimeapi.UInt64Value{Value: used}, RssBytes: &runtimeapi.UInt64Value{Value: used}},
		})
	}
	return out, nil
}

func labelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// nodeStats is the cAdvisor the kubelet asks for the node's memory: the hollow node's fake, with the
// node's capacity and its root cgroup's statistics from the scenario.
type nodeStats struct {
	cadvisortest.Fake
	runtime  *statsRuntime
	capacity uint64

	mu     sync.Mutex
	system uint64 // the node's own processes, the spike included while it lasts
	// observed is what each of the eviction manager's rounds was told memory.available was.
	observed []uint64
	changed  chan struct{} // closed and replaced at each observation
}

func newNodeStats(runtime *statsRuntime, s *Scenario) *nodeStats {
	return &nodeStats{Fake: cadvisortest.Fake{NodeName: "walkthrough"}, runtime: runtime,
		capacity: uint64(s.Memory.Value()), system: uint64(s.System.Value()), changed: make(chan struct{})}
}

// MachineInfo gives the node its memory capacity, which the Node's status reports.
func (n *nodeStats) MachineInfo(logger klog.Logger) (*model.MachineInfo, error) {
	info, err := n.Fake.MachineInfo(logger)
	if err != nil {
		return nil, err
	}
	info.MemoryCapacity = n.capacity
	return info, nil
}

// setSystem changes what the node's own processes use, and returns how many rounds of the
// eviction manager were told before: the next one is told of the change.
func (n *nodeStats) setSystem(bytes uint64) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.system = bytes
	return len(n.observed)
}

// ContainerInfoV2 answers for the root cgroup, "/": its limit is the node's memory, its working
// set the node's processes and the running pods'. Other cgroups it does not know.
func (n *nodeStats) ContainerInfoV2(name string, options model.RequestOptions) (map[string]model.ContainerInfo, error) {
	if name != "/" {
		return map[string]model.ContainerInfo{}, nil
	}
	_, uses, err := n.runtime.running(context.Background())
	if err != nil {
		return nil, fmt.Errorf("the runtime's containers: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	used := n.system
	for _, u := range uses {
		used += u
	}
	if used > n.capacity {
		used = n.capacity
	}
	// The summary the eviction manager asks for (Get(ctx, true)) wants fresh statistics: a
	// maximum age of 0, for "/" alone.
	if !options.Recursive && options.MaxAge != nil && *options.MaxAge == 0 {
		n.observed = append(n.observed, n.capacity-used)
		close(n.changed)
		n.changed = make(chan struct{})
	}
	now := time.Now()
	return map[string]model.ContainerInfo{"/": {
		ContainerReference: model.ContainerReference{Name: "/"},
		Spec: model.ContainerSpec{CreationTime: now.Add(-time.Hour), HasMemory: true, HasCpu: true,
			Memory: model.MemorySpec{Limit: n.capacity}},
		Stats: []*model.ContainerStats{{Timestamp: now, Cpu: &model.CpuStats{},
			Memory: &model.MemoryStats{Usage: used, WorkingSet: used, RSS: used}}},
	}}, nil
}

// observations is what the eviction manager's rounds were told so far, and a channel closed at
// the next.
func (n *nodeStats) observations() ([]uint64, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]uint64(nil), n.observed...), n.changed
}

// The node's one disk: the eviction manager asks, before it ranks anything, whether the images
// have a disk of their own (HasDedicatedImageFs: the image service's filesystem against cAdvisor's
// root filesystem), and gives the round up when it cannot tell. the hollow node's fakes answer no
// filesystem at all; here the images live on the root filesystem, as on a minikube node.
const (
	diskDevice   = "/dev/vda1"
	diskCapacity = 100 << 30
	diskUsed     = 40 << 30
	imagesDir    = "/var/lib/containerd"
)

func (n *nodeStats) disk() model.FsInfo {
	inodes, free := uint64(6_000_000), uint64(5_000_000)
	return model.FsInfo{Timestamp: time.Now(), Device: diskDevice, Mountpoint: "/", Capacity: diskCapacity,
		Available: diskCapacity - diskUsed, Usage: diskUsed, Inodes: &inodes, InodesFree: &free}
}

// RootFsInfo is the node's disk.
func (n *nodeStats) RootFsInfo() (model.FsInfo, error) { return n.disk(), nil }

// ImagesFsInfo is the node's disk.
func (n *nodeStats) ImagesFsInfo(context.Context) (model.FsInfo, error) { return n.disk(), nil }

// ContainerFsInfo is the node's disk.
func (n *nodeStats) ContainerFsInfo(context.Context) (model.FsInfo, error) { return n.disk(), nil }

// GetDirFsInfo is the node's disk, for every directory.
func (n *nodeStats) GetDirFsInfo(string) (model.FsInfo, error) { return n.disk(), nil }

// imageDisk is the kubelet's image service, with the filesystem of the images on the node's disk.
type imageDisk struct {
	internalapi.ImageManagerService
}

func (imageDisk) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp: time.Now().UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: imagesDir},
		UsedBytes: &runtimeapi.UInt64Value{Value: 5 << 30}, InodesUsed: &runtimeapi.UInt64Value{Value: 50_000},
	}}}, nil
}
