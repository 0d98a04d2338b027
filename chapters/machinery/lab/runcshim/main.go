// Package runcshim is an OCI runtime in front of runc for machines whose capability bounding set is
// smaller than a container runtime assumes. Docker and containerd ask runc for every capability
// a privileged container may have, and for a negative oom_score_adj for the kubelet's critical
// pods; on a machine (a CI sandbox, a nested container) whose bounding set lacks one of them —
// CAP_SYS_RESOURCE here — runc then fails with "unable to apply caps: operation not permitted"
// or "failed to update /proc/self/oom_score_adj: Permission denied". containerd's
// restrict_oom_score_adj does the second half of this for its own spec; minikube turns that
// setting off in its node.
//
// The shim changes a spec only where this machine cannot give what it asks, exactly as far as
// the machine allows, and then execs runc with the same arguments:
//   - capabilities the bounding set lacks are removed from every set of the process;
//   - an oom_score_adj below this process's own is raised to it when CAP_SYS_RESOURCE is not in
//     the effective set (only that capability lowers it).
//
// On a machine with the full bounding set it changes nothing. The lab registers it with Docker
// (`dockerd --add-runtime`) only where it is needed, and the base image installs it as runc in
// front of the real one (runc.real beside it).
//
// Usage: as runc (the same arguments). runcshim --explain prints what it would change here.
// The program is ./runc (package main), built into the base image and for the lab's engine.
package runcshim

import (
	"fmt"
	"os"
)

// Main is the shim's program.
func Main() {
	if len(os.Args) == 2 && os.Args[1] == "--explain" {
		m, err := ReadMachine()
		if err != nil {
			fmt.Fprintln(os.Stderr, "runcshim:", err)
			os.Exit(1)
		}
		fmt.Println(m.Explain())
		return
	}
	if err := run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "runcshim:", err)
		os.Exit(1)
	}
}
