package main

import "golang.org/x/sys/unix"

// dieWithParent asks the kernel to kill this process when Delve, its parent, ends: a tracee
// whose tracer is killed is let go, and would serve on.
func dieWithParent() error {
	return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
}
