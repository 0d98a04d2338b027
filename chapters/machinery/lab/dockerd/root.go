package dockerd

import (
	"os"
	"strings"
)

// RealRoot says whether this process is the machine's root: uid 0 in the machine's own user
// namespace. In a user namespace (`unshare --map-root-user`, a rootless container) uid 0 is root
// only there: it cannot start a Docker engine, mount, or make cgroups on the machine — so a
// normal user whose lab was built earlier with sudo is told to use sudo, not shown failures.
func RealRoot() bool {
	uidMap, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	return realRoot(os.Geteuid(), string(uidMap))
}

// realRoot decides it from the effective uid and /proc/self/uid_map: the machine's own user
// namespace maps every uid to itself ("0 0 4294967295").
func realRoot(euid int, uidMap string) bool {
	if euid != 0 {
		return false
	}
	for _, line := range strings.Split(uidMap, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295" {
			return true
		}
	}
	return false
}
