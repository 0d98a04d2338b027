package pressure

import (
	"context"
	"testing"
	"time"

	"github.com/google/cadvisor/lib/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
	kubelettypes "k8s.io/kubelet/pkg/types"
)

// The runtime reports what the scenario says the running pods use, shared among their running
// containers, and the node's root cgroup what they and the node's processes use: the numbers the
// eviction manager reads.
func TestStats(t *testing.T) {
	fake := apitest.NewFakeRuntimeService()
	add := func(id, pod, uid string, state runtimeapi.ContainerState) {
		fake.Containers[id] = &apitest.FakeContainer{ContainerStatus: runtimeapi.ContainerStatus{Id: id, State: state,
			Metadata: &runtimeapi.ContainerMetadata{Name: id},
			Labels: map[string]string{kubelettypes.KubernetesPodNameLabel: pod, kubelettypes.KubernetesPodNamespaceLabel: "default",
				kubelettypes.KubernetesPodUIDLabel: uid}}, SandboxID: "sandbox-" + uid}
	}
	add("a1", "a", "ua", runtimeapi.ContainerState_CONTAINER_RUNNING)
	add("a2", "a", "ua", runtimeapi.ContainerState_CONTAINER_RUNNING)
	add("b1", "web-walkthrough", "ub", runtimeapi.ContainerState_CONTAINER_RUNNING)
	add("c1", "c", "uc", runtimeapi.ContainerState_CONTAINER_EXITED) // evicted: its memory is the node's again
	s := &Scenario{Memory: resource.MustParse("1Gi"), System: resource.MustParse("100Mi"), Usage: map[string]resource.Quantity{
		"default/a": resource.MustParse("101"), "default/web": resource.MustParse("10Mi"), "default/c": resource.MustParse("500Mi")}}
	runtime := &statsRuntime{RuntimeService: fake, usage: func(ns, name string) resource.Quantity { return s.usageNamed(ns, name, node) }}
	stats, err := runtime.ListContainerStats(context.Background(), &runtimeapi.ContainerStatsFilter{})
	require.NoError(t, err)
	got := map[string]uint64{}
	for _, st := range stats {
		got[st.Attributes.Id] = st.Memory.WorkingSetBytes.Value
	}
	assert.Equal(t, map[string]uint64{"a1": 51, "a2": 50, "b1": 10 << 20}, got, "the running containers' working sets")
	one, err := runtime.ListContainerStats(context.Background(), &runtimeapi.ContainerStatsFilter{Id: "b1"})
	require.NoError(t, err)
	require.Len(t, one, 1)

	// A container the kubelet stops exits as a killed process does; one that exits on its own
	// keeps its exit code.
	require.NoError(t, runtime.StopContainer(context.Background(), "a2", 1))
	status, err := runtime.ContainerStatus(context.Background(), "a2", false)
	require.NoError(t, err)
	assert.Equal(t, int32(137), status.Status.ExitCode)
	status, err = runtime.ContainerStatus(context.Background(), "c1", false)
	require.NoError(t, err)
	assert.Equal(t, int32(0), status.Status.ExitCode)
	require.NoError(t, fake.StartContainer(context.Background(), "a2"))

	cadvisor := newNodeStats(runtime, s)
	maxAge := time.Duration(0)
	info, err := cadvisor.ContainerInfoV2("/", model.RequestOptions{MaxAge: &maxAge})
	require.NoError(t, err)
	root := info["/"]
	assert.Equal(t, uint64(1<<30), root.Spec.Memory.Limit)
	assert.Equal(t, uint64(100<<20+101+10<<20), root.Stats[0].Memory.WorkingSet)
	seen, _ := cadvisor.observations()
	assert.Equal(t, []uint64{1<<30 - (100<<20 + 101 + 10<<20)}, seen, "one round of the eviction manager, told memory.available")
	assert.Equal(t, 1, cadvisor.setSystem(900<<20))
	info, err = cadvisor.ContainerInfoV2("/", model.RequestOptions{Recursive: true})
	require.NoError(t, err)
	assert.Equal(t, uint64(900<<20+101+10<<20), info["/"].Stats[0].Memory.WorkingSet)
	seen, _ = cadvisor.observations()
	assert.Len(t, seen, 1, "a recursive listing is the stats provider's, not a round of the eviction manager")
	other, err := cadvisor.ContainerInfoV2("/kubepods", model.RequestOptions{})
	require.NoError(t, err)
	assert.Empty(t, other)
}
