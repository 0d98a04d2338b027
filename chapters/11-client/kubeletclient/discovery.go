// Package kubeletclient fetches /pods (and the kubelet's other read endpoints) the way production
// agents should: it finds a node's kubelet from the Node object (address by preferred type, port
// from .status.daemonEndpoints; an informer when polling), authenticates with the pod's
// ServiceAccount token, a token file, or — outside a pod — a short-lived token minted for a
// dedicated ServiceAccount (the user's own kubeconfig credentials only when asked), never sends a
// credential over plain HTTP or, unless told twice, to a kubelet whose certificate is not checked,
// and falls back to the apiserver's node proxy only when the kubelet cannot be reached. A failed
// request is a RequestError: what the client saw, for a caller to explain (the production client,
// examples/kubelet-pods, turns it into what to do; its agent package also asks every node at once
// and runs doctor).
//
// It depends on client-go and the API types only — no k8s.io/kubernetes — so it can be lifted
// into an agent of your own.
package kubeletclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
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
		i := slices.IndexFunc(DefaultAddressTypes, func(t corev1.NodeAddressType) bool { return strings.EqualFold(name, string(t)) })
		if i < 0 {
			known := strings.ReplaceAll(strings.Trim(fmt.Sprint(DefaultAddressTypes), "[]"), " ", ", ") // no type holds a space
			return nil, fmt.Errorf("unknown node address type %q: use one or more of %s", name, known)
		}
		types = append(types, DefaultAddressTypes[i])
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
	// ServerName is the name to check the kubelet's certificate against, when it is not the
	// address dialed (Options.TLSServerName).
	ServerName string
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
	found := slices.ContainsFunc(types, func(t corev1.NodeAddressType) bool {
		i := slices.IndexFunc(node.Status.Addresses, func(a corev1.NodeAddress) bool { return a.Type == t && a.Address != "" })
		if i >= 0 {
			e.Address = node.Status.Addresses[i]
		}
		return i >= 0
	})
	if !found {
		var have []string
		for _, a := range node.Status.Addresses {
			have = append(have, string(a.Type)+"="+a.Address)
		}
		return e, &NoAddressError{Node: node.Name, Types: types, Have: have}
	}
	switch {
	case portOverride > 0:
		e.Port, e.PortFrom = portOverride, portGiven
	case node.Status.DaemonEndpoints.KubeletEndpoint.Port > 0:
		e.Port, e.PortFrom = int(node.Status.DaemonEndpoints.KubeletEndpoint.Port), "daemonEndpoints"
	default:
		e.Port, e.PortFrom = DefaultKubeletPort, "default"
	}
	return e, nil
}

// portGiven is Endpoint.PortFrom for the port EndpointFor was given (a Client names it as its
// Options.Names do).
const portGiven = "Options.KubeletPort"

// NoAddressError says a node has no address of the preferred types.
type NoAddressError struct {
	Node  string
	Types []corev1.NodeAddressType
	Have  []string
	// Setting names the setting that chooses the types (default Options.AddressTypes).
	Setting string
}

func (e *NoAddressError) Error() string {
	setting := e.Setting
	if setting == "" {
		setting = Names(nil).name("AddressTypes")
	}
	return fmt.Sprintf("node %s has no address of type %v (it has: %s); choose others with %s",
		e.Node, e.Types, strings.Join(e.Have, ", "), setting)
}

// isAddressType says whether name is a node address type (Hostname, InternalIP, …) rather
// than a literal server name.
func isAddressType(name string) bool {
	return slices.Contains(DefaultAddressTypes, corev1.NodeAddressType(name))
}

// nodeSource is where the client reads Nodes: the apiserver, one request per call
// (listNodes), or an informer's cache kept current by one watch (watchedNodes).
type nodeSource interface {
	get(ctx context.Context, name string) (*corev1.Node, error)
	list(ctx context.Context) ([]corev1.Node, error)
}

// listNodes asks the apiserver each time: one GET for a node, one LIST for all.
type listNodes struct{ client kubernetes.Interface }

func (l *listNodes) get(ctx context.Context, name string) (*corev1.Node, error) {
	return l.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (l *listNodes) list(ctx context.Context) ([]corev1.Node, error) {
	nodes, err := l.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return nodes.Items, nil
}

// watchedNodes answers from an informer's store: after its first list (or watch-list), a poll
// costs the apiserver nothing.
type watchedNodes struct{ store cache.Store }

func (w *watchedNodes) get(_ context.Context, name string) (*corev1.Node, error) {
	obj, ok, err := w.store.GetByKey(name)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	return obj.(*corev1.Node), nil
}

func (w *watchedNodes) list(context.Context) ([]corev1.Node, error) {
	objs := w.store.List()
	nodes := make([]corev1.Node, len(objs))
	for i, obj := range objs {
		nodes[i] = *obj.(*corev1.Node)
	}
	return nodes, nil
}

// WatchNodes makes the client read Nodes from an informer instead of asking the apiserver on
// each fetch, as an agent that polls should: one watch, kept open until ctx ends. With a node
// name, only that Node is watched (a field selector), which is what a per-node agent needs.
// It returns once the informer has synced. RBAC: list and watch on nodes.
func (c *Client) WatchNodes(ctx context.Context, node string) error {
	if c.apiserver == nil {
		return errors.New("watching nodes needs a kubeconfig")
	}
	selector := fields.Everything()
	if node != "" {
		selector = fields.OneTermEqualSelector("metadata.name", node)
	}
	lw := cache.NewListWatchFromClient(c.apiserver.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll, selector)
	informer := cache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, cache.Indexers{})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watch nodes: the informer did not sync: %w", context.Cause(ctx))
	}
	c.nodes = &watchedNodes{store: informer.GetStore()}
	return nil
}
