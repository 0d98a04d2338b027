package netns

import (
	"errors"
	"io/fs"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// What a reader is told when no namespace could be made, on the machines it happens on: Ubuntu
// 24.04's AppArmor switch first, since it is the common case on laptops.
func TestExplain(t *testing.T) {
	unshare := errors.New("unshare: write failed /proc/self/uid_map: Operation not permitted")
	tests := []struct {
		name  string
		euid  int
		files map[string]string
		want  string // the added advice; "" for the error alone
	}{
		{name: "root: nothing to add", euid: 0, files: map[string]string{apparmorRestriction: "1\n"}},
		{name: "Ubuntu 24.04, AppArmor restricts", euid: 1000,
			files: map[string]string{apparmorRestriction: "1\n", "/proc/sys/user/max_user_namespaces": "63465\n"},
			want:  "AppArmor blocks unprivileged user namespaces on this machine (kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu's default since 24.04). Either run the tests as root, or allow them until the next reboot with `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`"},
		{name: "AppArmor switch off, user namespaces disabled", euid: 1000,
			files: map[string]string{apparmorRestriction: "0\n", "/proc/sys/user/max_user_namespaces": "0\n"},
			want:  "user namespaces are disabled (user.max_user_namespaces=0): run the tests as root, or raise it with `sudo sysctl user.max_user_namespaces=15000`"},
		{name: "no AppArmor, namespaces allowed, still refused", euid: 1000,
			files: map[string]string{"/proc/sys/user/max_user_namespaces": "63465\n"},
			want:  "unprivileged user namespaces seem unavailable here: run the tests as root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readFile := func(name string) ([]byte, error) {
				if data, ok := tt.files[name]; ok {
					return []byte(data), nil
				}
				return nil, fs.ErrNotExist
			}
			err := explainOn(unshare, tt.euid, readFile)
			assert.ErrorIs(t, err, unshare, "the cause stays")
			if tt.want == "" {
				assert.Equal(t, unshare.Error(), err.Error())
				return
			}
			assert.Equal(t, unshare.Error()+"\n  "+tt.want, err.Error())
		})
	}
}

// AddAddress changes nothing but a namespace of this program's: on this machine's network, even
// with the marker set by hand, it refuses (this test runs outside any namespace of ours).
func TestAddAddressOnlyInside(t *testing.T) {
	for _, tc := range []struct {
		name, marker, ip, want string
	}{
		{"not an address", "", "192.168.0.888", `"192.168.0.888" is not an IP address`},
		{"outside a namespace", "", "192.168.0.8", "adding 192.168.0.8: not inside a private network namespace of this program's"},
		{"the marker alone", PrivateNodeIP, "192.168.0.8", "adding 192.168.0.8: not inside a private network namespace of this program's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(insideEnv, tc.marker)
			assert.ErrorContains(t, AddAddress(tc.ip), tc.want)
		})
	}
}

// AddAddress of an address the namespace's lo already has succeeds and changes nothing: chapter
// 10's commands, run one after another in one namespace (as the README test runs them), each add
// the reading notes' address. The test runs itself again inside a namespace of its own.
func TestAddAddressAgain(t *testing.T) {
	if _, inside := Inside(); !inside {
		tier.Require(t, "private network", Available())
		cmd, err := Command("-test.run=^TestAddAddressAgain$", "-test.v", "-test.count=1")
		require.NoError(t, err)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "--- PASS: TestAddAddressAgain", "the test ran inside the namespace")
		return
	}
	for range 2 {
		require.NoError(t, AddAddress("192.168.0.8"))
	}
	lo, err := net.InterfaceByName("lo")
	require.NoError(t, err)
	addrs, err := lo.Addrs()
	require.NoError(t, err)
	found := 0
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(net.ParseIP("192.168.0.8")) {
			found++
		}
	}
	assert.Equal(t, 1, found, "lo carries the address once: %v", addrs)
}
