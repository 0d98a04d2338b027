package clientnode

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/12-node/bootstory"
)

// Chapter 12's bootstrap story of this package's node, in the order the story tells it: the
// kubelet runs before any apiserver answers, starts the control plane's containers, registers
// with the apiserver it started, and mirrors its static pods. The story is read once, when the
// cluster has just started (prepare), before any test here restarts its kubelet.
func TestBootstrapOrder(t *testing.T) {
	f := nodeFixture(t)
	require.NoError(t, f.bootErr)
	profile, story := f.bootProfile, f.bootStory
	assert.Equal(t, "docker", profile.Config.Driver)
	assert.Equal(t, "containerd", profile.Config.KubernetesConfig.ContainerRuntime)
	assert.Equal(t, f.cluster.KubernetesVersion, profile.Config.KubernetesConfig.KubernetesVersion)

	at := map[bootstory.Step]time.Time{}
	for _, step := range []bootstory.Step{bootstory.UnitWithoutConfig, bootstory.ManifestsWritten, bootstory.KubeletRuns, bootstory.NoAPIServer,
		bootstory.ContainersCreated, bootstory.NodeRegistered, bootstory.MirrorPods, bootstory.FinalRestart} {
		e, ok := story.Find(step)
		require.True(t, ok, "the evidence shows no step %d:\n%+v", step, story.Events)
		at[step] = e.At
	}
	before := func(a, b bootstory.Step, why string) {
		assert.True(t, at[a].Before(at[b]), "%s: step %d at %s, step %d at %s", why, a, at[a].Format(time.StampMicro), b, at[b].Format(time.StampMicro))
	}
	before(bootstory.UnitWithoutConfig, bootstory.KubeletRuns, "minikube starts the unit before kubeadm configures it")
	before(bootstory.ManifestsWritten, bootstory.ContainersCreated, "the containers come from the manifests")
	before(bootstory.KubeletRuns, bootstory.ContainersCreated, "the kubelet creates the containers")
	before(bootstory.NoAPIServer, bootstory.NodeRegistered, "no apiserver answers before the kubelet has started it")
	before(bootstory.ContainersCreated, bootstory.NodeRegistered, "the kubelet registers with the apiserver it started")
	// The apiserver's timestamps have whole seconds.
	assert.False(t, at[bootstory.MirrorPods].Before(at[bootstory.NodeRegistered].Truncate(time.Second)), "a mirror pod needs its Node")
	before(bootstory.KubeletRuns, bootstory.FinalRestart, "kubelet-finalize comes last")
}

// What chapter 12 tells a reader without a running profile.
func TestLookUpWithoutProfile(t *testing.T) {
	f := nodeFixture(t)
	m := bootstory.Minikube{Binary: "minikube", Profile: "no-such-profile", Command: f.cluster.Command}
	_, err := m.LookUp(context.Background())
	require.ErrorIs(t, err, bootstory.ErrNoProfile)
	assert.ErrorContains(t, err, "start one with `minikube start --driver=docker --container-runtime=containerd`")
}

// readBootStory reads chapter 12's story of the cluster's start, as the chapter does.
func readBootStory(ctx context.Context, f *fixture) {
	m := bootstory.Minikube{Binary: "minikube", Profile: "minikube", Command: f.cluster.Command}
	f.bootProfile, f.bootErr = m.LookUp(ctx)
	if f.bootErr == nil {
		f.bootStory, f.bootErr = bootstory.TellStory(ctx, m, bootstory.Options{NodeName: f.bootProfile.Name, KubernetesVersion: f.cluster.KubernetesVersion})
	}
}
