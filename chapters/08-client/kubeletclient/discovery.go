// Package kubeletclient fetches /pods from kubelets the way production agents should: it finds
// a node's kubelet from the Node object (address by preferred type, port from
// .status.daemonEndpoints), authenticates with a ServiceAccount token, a token file or the
// kubeconfig's credentials, verifies TLS unless told not to, falls back to the apiserver's node
// proxy only when the kubelet cannot be reached, and explains every failure.
//
// It depends on client-go and the API types only — no k8s.io/kubernetes — so it can be lifted
// into an agent of your own.
package kubeletclient

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DefaultAddressTypes is the order in which a node's addresses are tried: the internal IP first,
// as metrics-server and most agents do (the apiserver's own default puts Hostname first).
var DefaultAddressTypes = []corev1.NodeAddressType{
	corev1.NodeInternalIP, corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS, corev1.NodeExternalIP,
}

// DefaultKubeletPort is the kubelet's secure port when the Node reports none.
const DefaultKubeletPort = 10250

// ParseAddressTypes reads a comma-separated, ordered list such as "InternalIP,Hostname".
func ParseAddressTypes(list string) ([]corev1.NodeAddressType, error) {
	var types []corev1.NodeAddressType
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		known := false
		for _, t := range DefaultAddressTypes {
			if strings.EqualFold(name, string(t)) {
				types, known = append(types, t), true
			}
		}
		if !known {
			valid := make([]string, len(DefaultAddressTypes))
			for i, t := range DefaultAddressTypes {
				valid[i] = string(t)
			}
			return nil, fmt.Errorf("unknown node address type %q: use one or more of %s", name, strings.Join(valid, ", "))
		}
	}
	return types, nil
}

// Endpoint is where a node's kubelet serves its API.
type Endpoint struct {
	Node    string
	Address corev1.NodeAddress
	Port    int
	// PortFrom says where the port came from: "daemonEndpoints", "--kubelet-port" or "default".
	PortFrom string
}

// URL is https://address:port, with IPv6 addresses in brackets.
func (e Endpoint) URL() string {
	return "https://" + net.JoinHostPort(e.Address.Address, strconv.Itoa(e.Port))
}

// EndpointFor picks the kubelet's endpoint from a Node, as the apiserver does for its node
// proxy: the first address whose type comes first in types, and the port the kubelet reported
// in .status.daemonEndpoints.kubeletEndpoint.port — unless portOverride is set, and 10250 only
// when the node reports none.
func EndpointFor(node *corev1.Node, types []corev1.NodeAddressType, portOverride int) (Endpoint, error) {
	e := Endpoint{Node: node.Name}
	found := false
	for _, t := range types {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				e.Address, found = a, true
				break
			}
		}
		if found {
			break
		}
	}
	if !found {
		var have []string
		for _, a := range node.Status.Addresses {
			have = append(have, string(a.Type)+"="+a.Address)
		}
		return e, &NoAddressError{Node: node.Name, Types: types, Have: have}
	}
	switch {
	case portOverride > 0:
		e.Port, e.PortFrom = portOverride, "--kubelet-port"
	case node.Status.DaemonEndpoints.KubeletEndpoint.Port > 0:
		e.Port, e.PortFrom = int(node.Status.DaemonEndpoints.KubeletEndpoint.Port), "daemonEndpoints"
	default:
		e.Port, e.PortFrom = DefaultKubeletPort, "default"
	}
	return e, nil
}

// NoAddressError says a node has no address of the preferred types.
type NoAddressError struct {
	Node  string
	Types []corev1.NodeAddressType
	Have  []string
}

func (e *NoAddressError) Error() string {
	return fmt.Sprintf("node %s has no address of type %v (it has: %s); choose others with --kubelet-preferred-address-types",
		e.Node, e.Types, strings.Join(e.Have, ", "))
}
