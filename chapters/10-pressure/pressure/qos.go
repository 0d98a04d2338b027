package pressure

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/qos"
)

// QoSRow is what the kubelet makes of one pod on a node with cgroupsPerQOS (the default): its
// QoS class, the cgroup it puts the pod in, and the oom_score_adj of each of its containers.
type QoSRow struct {
	Pod   *corev1.Pod
	Class corev1.PodQOSClass
	// Cgroup is the pod's cgroup as the kubelet names it, before a driver writes it out.
	Cgroup cm.CgroupName
	// Cgroupfs and Systemd are the cgroup's path under each cgroup driver.
	Cgroupfs, Systemd string
	// OOMScoreAdj is each container's oom_score_adj, in the pod's order.
	OOMScoreAdj []ContainerOOM
}

// ContainerOOM is one container's oom_score_adj.
type ContainerOOM struct {
	Name string
	Adj  int
}

// QoS computes each pod's row on a node of memoryCapacity bytes. The class is GetPodQOS's; the
// cgroup is where the pod container manager puts the pod
// (pkg/kubelet/cm/pod_container_manager_linux.go#L124-L144 (func (m *podContainerManagerImpl) GetPodContainerName)):
// under the QoS class's cgroup (Guaranteed pods straight under kubepods, the others under
// kubepods/burstable or kubepods/besteffort, as the QoS container manager makes them:
// pkg/kubelet/cm/qos_container_manager_linux.go#L98-L101 (qosClasses := map[v1.PodQOSClass]CgroupName{)), as pod<UID>; written out by the
// cgroup manager's driver (cgroupfs: ToCgroupfs, systemd: ToSystemd). The oom_score_adj is
// GetContainerOOMScoreAdjust's.
func QoS(pods []*corev1.Pod, memoryCapacity int64) []QoSRow {
	// The node allocatable cgroup with cgroupRoot "/" and cgroupsPerQOS, as the kubelet names it.
	kubepods := cm.ParseCgroupfsToCgroupName(cm.NodeAllocatableRoot("/", true, "cgroupfs"))
	parent := map[corev1.PodQOSClass]cm.CgroupName{
		corev1.PodQOSGuaranteed: kubepods,
		corev1.PodQOSBurstable:  cm.NewCgroupName(kubepods, strings.ToLower(string(corev1.PodQOSBurstable))),
		corev1.PodQOSBestEffort: cm.NewCgroupName(kubepods, strings.ToLower(string(corev1.PodQOSBestEffort))),
	}
	rows := make([]QoSRow, 0, len(pods))
	for _, p := range pods {
		r := QoSRow{Pod: p, Class: v1qos.GetPodQOS(p)}
		r.Cgroup = cm.NewCgroupName(parent[r.Class], cm.GetPodCgroupNameSuffix(p.UID))
		r.Cgroupfs, r.Systemd = r.Cgroup.ToCgroupfs(), r.Cgroup.ToSystemd()
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			r.OOMScoreAdj = append(r.OOMScoreAdj, ContainerOOM{c.Name, qos.GetContainerOOMScoreAdjust(p, c, memoryCapacity)})
		}
		rows = append(rows, r)
	}
	return rows
}

// uidShown is the UID the QoS table writes in a cgroup's name: pods get theirs from the
// apiserver (or, static ones, from their manifest's path), so the table shows where it goes.
const uidShown types.UID = "<uid>"

// exampleUID shows what systemd's escaping does to a real UID.
const exampleUID types.UID = "2c7d0e4a-9b1f-4c3e-8a6d-5f0b1e2d3c4a"

// PrintQoS writes the QoS table of pods on a node of memoryCapacity bytes.
func PrintQoS(out io.Writer, pods []*corev1.Pod, memoryCapacity int64, node types.NodeName) error {
	shown := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		shown[i] = p.DeepCopy()
		shown[i].UID = uidShown
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tQOS CLASS\tCGROUP (cgroupfs driver)\tOOM_SCORE_ADJ")
	rows := QoS(shown, memoryCapacity)
	for _, r := range rows {
		var adj []string
		for _, c := range r.OOMScoreAdj {
			adj = append(adj, fmt.Sprintf("%s %d", c.Name, c.Adj))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", manifestKey(r.Pod, node), r.Class, r.Cgroupfs, strings.Join(adj, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nThe same cgroups as the systemd driver names them (cgroupDriver: systemd, which kubeadm sets):")
	seen := map[corev1.PodQOSClass]bool{}
	for _, r := range rows {
		if !seen[r.Class] {
			seen[r.Class] = true
			fmt.Fprintf(out, "  %-10s  %s\n", r.Class, r.Systemd)
		}
	}
	example := cm.NewCgroupName(rows[0].Cgroup[:len(rows[0].Cgroup)-1], cm.GetPodCgroupNameSuffix(exampleUID))
	fmt.Fprintf(out, "and with a real UID, whose dashes systemd's names cannot hold:\n  %s\n  %s\n", example.ToCgroupfs(), example.ToSystemd())
	return nil
}
