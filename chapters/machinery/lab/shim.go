package lab

import (
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/runcshim"
)

// ShimNeeded says whether Docker on this machine needs the runc shim, and why: when its
// capability bounding set lacks a capability a privileged container asks for, or a container
// runtime could not lower a container's oom_score_adj (CAP_SYS_RESOURCE).
func ShimNeeded() (bool, string) {
	m, err := runcshim.ReadMachine()
	if err != nil {
		return true, "could not read its capabilities (" + err.Error() + ")"
	}
	if !m.Needed() {
		return false, ""
	}
	return true, m.Explain()
}
