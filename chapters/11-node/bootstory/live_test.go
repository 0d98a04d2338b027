package bootstory

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/labtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

// The bootstrap story of a real minikube node (the lab's), in the order the story tells it: the
// kubelet runs before any apiserver answers, starts the control plane's containers, registers
// with the apiserver it started, and mirrors its static pods.
func TestBootstrapOrder(t *testing.T) {
	c := labtest.Shared(t)
	m := Minikube{Binary: "minikube", Profile: "minikube", Command: c.Command}
	ctx := context.Background()
	profile, err := m.LookUp(ctx)
	require.NoError(t, err)
	assert.Equal(t, "docker", profile.Config.Driver)
	assert.Equal(t, "containerd", profile.Config.KubernetesConfig.ContainerRuntime)
	assert.Equal(t, c.KubernetesVersion, profile.Config.KubernetesConfig.KubernetesVersion)

	story, err := TellStory(ctx, m, Options{NodeName: profile.Name, KubernetesVersion: c.KubernetesVersion})
	require.NoError(t, err)
	at := map[Step]time.Time{}
	for _, step := range []Step{UnitWithoutConfig, ManifestsWritten, KubeletRuns, NoAPIServer, ContainersCreated, NodeRegistered, MirrorPods, FinalRestart} {
		e, ok := story.Find(step)
		require.True(t, ok, "the evidence shows no step %d:\n%+v", step, story.Events)
		at[step] = e.At
	}
	before := func(a, b Step, why string) {
		assert.True(t, at[a].Before(at[b]), "%s: step %d at %s, step %d at %s", why, a, at[a].Format(time.StampMicro), b, at[b].Format(time.StampMicro))
	}
	before(UnitWithoutConfig, KubeletRuns, "minikube starts the unit before kubeadm configures it")
	before(ManifestsWritten, ContainersCreated, "the containers come from the manifests")
	before(KubeletRuns, ContainersCreated, "the kubelet creates the containers")
	before(NoAPIServer, NodeRegistered, "no apiserver answers before the kubelet has started it")
	before(ContainersCreated, NodeRegistered, "the kubelet registers with the apiserver it started")
	// The apiserver's timestamps have whole seconds.
	assert.False(t, at[MirrorPods].Before(at[NodeRegistered].Truncate(time.Second)), "a mirror pod needs its Node")
	before(KubeletRuns, FinalRestart, "kubelet-finalize comes last")
}

// What a reader without a running profile is told.
func TestLookUpWithoutProfile(t *testing.T) {
	c := labtest.Shared(t)
	m := Minikube{Binary: "minikube", Profile: "no-such-profile", Command: c.Command}
	_, err := m.LookUp(context.Background())
	require.ErrorIs(t, err, ErrNoProfile)
	assert.ErrorContains(t, err, "start one with `minikube start --driver=docker --container-runtime=containerd`")
}
