package minicluster

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Over TCP the cluster listens where its clients must reach it, and only there: the apiserver
// (authenticated: client certificates, RBAC) and each kubelet's secure port (webhook
// authentication and authorization). etcd takes unix sockets in the cluster's directory, its
// peer listener too.
func TestListensOnlyWhereExpected(t *testing.T) {
	c := cluster(t)
	want := []string{strings.TrimPrefix(c.Admin.Host, "https://")}
	for _, n := range c.Nodes {
		want = append(want, net.JoinHostPort(n.IP, strconv.Itoa(n.Port)))
	}
	assert.ElementsMatch(t, want, tcpListeners(t))
}

// tcpListeners returns the IPv4 addresses (ip:port) this process listens on, from /proc.
func tcpListeners(t *testing.T) []string {
	t.Helper()
	mine := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !mine[f[9]] { // 0A: LISTEN
				continue
			}
			hexIP, hexPort, _ := strings.Cut(f[1], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			require.NoError(t, err)
			addr := f[1] // IPv6 as /proc writes it: no expectation matches it
			if len(hexIP) == 8 {
				n, err := strconv.ParseUint(hexIP, 16, 32)
				require.NoError(t, err)
				addr = net.JoinHostPort(net.IPv4(byte(n), byte(n>>8), byte(n>>16), byte(n>>24)).String(), strconv.Itoa(int(port)))
			}
			out = append(out, addr)
		}
	}
	return out
}
