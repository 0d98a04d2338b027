package pressure

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// The cgroups are where a kubelet with cgroupsPerQOS puts the pods, under either driver, and the
// oom_score_adj what it gives their containers, as the kubelet's own functions compute them.
func TestQoS(t *testing.T) {
	resources := func(request, limit string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{}
		if request != "" {
			r.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(request)}
		}
		if limit != "" {
			r.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit), corev1.ResourceCPU: resource.MustParse("100m")}
			if request == limit {
				r.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
			}
		}
		return r
	}
	pod := func(uid string, r corev1.ResourceRequirements) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: k8stypes.UID("0e8f-" + uid)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: r}}}}
	}
	for _, tc := range []struct {
		name              string
		pod               *corev1.Pod
		class             corev1.PodQOSClass
		cgroupfs, systemd string
		adj               int
	}{
		{"best effort", pod("a", resources("", "")), corev1.PodQOSBestEffort,
			"/kubepods/besteffort/pod0e8f-a", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0e8f_a.slice", 1000},
		{"burstable, a quarter of the node", pod("b", resources("1Gi", "")), corev1.PodQOSBurstable,
			"/kubepods/burstable/pod0e8f-b", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0e8f_b.slice", 750},
		{"burstable, almost nothing", pod("c", resources("1Mi", "2Gi")), corev1.PodQOSBurstable,
			"/kubepods/burstable/pod0e8f-c", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0e8f_c.slice", 999},
		{"guaranteed", pod("d", resources("1Gi", "1Gi")), corev1.PodQOSGuaranteed,
			"/kubepods/pod0e8f-d", "/kubepods.slice/kubepods-pod0e8f_d.slice", -997},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := QoS([]*corev1.Pod{tc.pod}, 4<<30)
			require.Len(t, rows, 1)
			assert.Equal(t, tc.class, rows[0].Class)
			assert.Equal(t, tc.cgroupfs, rows[0].Cgroupfs)
			assert.Equal(t, tc.systemd, rows[0].Systemd)
			assert.Equal(t, []ContainerOOM{{"app", tc.adj}}, rows[0].OOMScoreAdj)
		})
	}
	var out bytes.Buffer
	require.NoError(t, PrintQoS(&out, []*corev1.Pod{pod("a", resources("", ""))}, 4<<30, node))
	assert.Contains(t, out.String(), "/kubepods/besteffort/pod<uid>", "the table shows where the UID goes, not a UID of a run")
	assert.Contains(t, out.String(), "kubepods-besteffort-pod2c7d0e4a_9b1f_4c3e_8a6d_5f0b1e2d3c4a.slice")
}
