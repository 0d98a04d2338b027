package kubeletclient

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseAddressTypes(t *testing.T) {
	types, err := ParseAddressTypes("Hostname, internalip")
	require.NoError(t, err)
	assert.Equal(t, []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalIP}, types)

	_, err = ParseAddressTypes("InternalIP,LegacyHostIP")
	require.Error(t, err)
	assert.Equal(t, `unknown node address type "LegacyHostIP": use one or more of InternalIP, Hostname, InternalDNS, ExternalDNS, ExternalIP`, err.Error())
}

// node is a Node n1 with a kubelet port and addresses.
func node(port int32, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	n.Status.Addresses = addrs
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	return n
}

func TestEndpointFor(t *testing.T) {
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.49.2"}
	internal6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::2"}
	hostname := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "minikube"}
	tests := []struct {
		name     string
		node     *corev1.Node
		types    []corev1.NodeAddressType
		override int
		wantURL  string
		wantFrom string
		wantErr  string
	}{
		{"first preferred type, port from the node", node(10250, hostname, internal), DefaultAddressTypes, 0, "https://192.168.49.2:10250", "daemonEndpoints", ""},
		{"order of the flag wins", node(10250, internal, hostname), []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalIP}, 0, "https://minikube:10250", "daemonEndpoints", ""},
		{"the node's own port", node(20250, internal), DefaultAddressTypes, 0, "https://192.168.49.2:20250", "daemonEndpoints", ""},
		{"a given port overrides", node(20250, internal), DefaultAddressTypes, 10255, "https://192.168.49.2:10255", "Options.KubeletPort", ""},
		{"10250 when the node reports none", node(0, internal), DefaultAddressTypes, 0, "https://192.168.49.2:10250", "default", ""},
		{"IPv6 in brackets", node(10250, internal6), DefaultAddressTypes, 0, "https://[fd00::2]:10250", "daemonEndpoints", ""},
		{"no address of the types", node(10250, hostname), []corev1.NodeAddressType{corev1.NodeExternalIP}, 0, "", "", "node n1 has no address of type [ExternalIP] (it has: Hostname=minikube)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := EndpointFor(tt.node, tt.types, tt.override)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantURL, e.URL())
			assert.Equal(t, tt.wantFrom, e.PortFrom)
		})
	}
}

// The library takes 0 for its defaults and refuses what would silently mean something else: a
// negative timeout (no limit for the HTTP clients) or a port out of range.
func TestNewChecksNumbers(t *testing.T) {
	c, err := New(nil, Options{Auth: AuthNone})
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, c.opts.Timeout)
	for name, opts := range map[string]Options{
		"request timeout -1s: must be more than 0": {Auth: AuthNone, Timeout: -time.Second},
		"kubelet port -1: a port is 1 to 65535":    {Auth: AuthNone, KubeletPort: -1},
		"kubelet port 70000: a port is 1 to 65535": {Auth: AuthNone, KubeletPort: 70000},
	} {
		_, err := New(nil, opts)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), name)
	}
}

// The client's errors name the setting to change as Options' field — what an agent that lifts
// the package sets — unless the program names it (Options.Names: a command's flags).
func TestErrorsNameSettings(t *testing.T) {
	flags := Names{"Via": "--via", "KubeletCAFile": "--kubelet-ca-file", "InsecureSkipTLSVerify": "--insecure-skip-tls-verify",
		"AllowCredentialsToUnverifiedKubelet": "--allow-credentials-to-unverified-kubelet", "KubeletURL": "--kubelet-url"}
	tests := []struct {
		name            string
		opts            Options
		want, wantFlags string
	}{
		{"an unknown way", Options{Via: "x"}, `unknown Options.Via "x"`, `unknown --via "x"`},
		{"a CA and no check", Options{Auth: AuthNone, KubeletCAFile: "ca.crt", InsecureSkipTLSVerify: true},
			"Options.KubeletCAFile and Options.InsecureSkipTLSVerify contradict each other", "--kubelet-ca-file and --insecure-skip-tls-verify contradict each other"},
		{"allowed, but checked", Options{Auth: AuthNone, AllowCredentialsToUnverifiedKubelet: true},
			"Options.AllowCredentialsToUnverifiedKubelet only matters with Options.InsecureSkipTLSVerify", "--allow-credentials-to-unverified-kubelet only matters with --insecure-skip-tls-verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(nil, tt.opts)
			assert.ErrorContains(t, err, tt.want)
			tt.opts.Names = flags
			_, err = New(nil, tt.opts)
			assert.ErrorContains(t, err, tt.wantFlags)
		})
	}
	t.Run("no address of the types", func(t *testing.T) {
		c, err := New(nil, Options{Auth: AuthNone})
		require.NoError(t, err)
		_, err = c.EndpointOf(node(10250))
		assert.ErrorContains(t, err, "choose others with Options.AddressTypes")
		c, err = New(nil, Options{Auth: AuthNone, Names: Names{"AddressTypes": "--kubelet-preferred-address-types"}})
		require.NoError(t, err)
		_, err = c.EndpointOf(node(10250))
		assert.ErrorContains(t, err, "choose others with --kubelet-preferred-address-types")
	})
	t.Run("no kubeconfig", func(t *testing.T) {
		c, err := New(nil, Options{Auth: AuthNone})
		require.NoError(t, err)
		_, err = c.Node(context.Background(), "n1")
		assert.ErrorContains(t, err, "needs a kubeconfig (or a kubelet URL (FetchURL))")
		c, err = New(nil, Options{Auth: AuthNone, Names: flags})
		require.NoError(t, err)
		_, err = c.Node(context.Background(), "n1")
		assert.ErrorContains(t, err, "needs a kubeconfig (or --kubelet-url)")
	})
}
