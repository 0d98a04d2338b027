package kubeletclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/local"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"
)

// The kubelet's local Pods API (v1.37, the PodsAPI feature gate, beta and on by default): a gRPC
// service on a unix socket in the kubelet's root directory, <root-dir>/pods-api/pods-api.sock,
// with ListPods, GetPod and WatchPods. It takes no credentials and checks none: whoever may open
// the socket file may call it, and the file's mode is the kubelet's umask's (root's, 0755 under
// systemd: root alone may connect). It answers for its own node only, and only on that node — an
// agent in a pod mounts the directory (hostPath /var/lib/kubelet/pods-api) and runs as root.

// DefaultPodsAPISocket is where a kubelet whose root directory is the default, /var/lib/kubelet,
// serves its Pods API.
const DefaultPodsAPISocket = "/var/lib/kubelet/pods-api/pods-api.sock"

// PodsAPICredentials is Client.Credentials with ViaPodsAPI.
const PodsAPICredentials = "none: the Pods API takes none; the socket's file mode decides who may connect"

// podsAPI is the client's connection to the Pods API socket, made at its first use: gRPC
// connects (and reconnects) through dial, which checks the socket before each connection.
type podsAPI struct {
	socket string
	once   sync.Once
	conn   *grpc.ClientConn
	err    error
	// lastDial is the error of the last connection attempt: gRPC reports a failed connection as
	// Unavailable, with the dialer's error as text only.
	mu       sync.Mutex
	lastDial error
}

func (p *podsAPI) client() (podsv1alpha1.PodsClient, error) {
	p.once.Do(func() {
		// local credentials: no TLS, and gRPC checks the connection is a unix socket (or loopback).
		p.conn, p.err = grpc.NewClient("passthrough:///pods-api", grpc.WithTransportCredentials(local.NewCredentials()),
			grpc.WithContextDialer(p.dial))
	})
	if p.err != nil {
		return nil, p.err
	}
	return podsv1alpha1.NewPodsClient(p.conn), nil
}

// dial connects to the socket once CheckPodsAPISocket has vouched for it.
func (p *podsAPI) dial(ctx context.Context, _ string) (net.Conn, error) {
	conn, err := func() (net.Conn, error) {
		socket, err := trustedSocket(p.socket)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}()
	p.mu.Lock()
	p.lastDial = err
	p.mu.Unlock()
	return conn, err
}

func (p *podsAPI) close() {
	if p.conn != nil {
		_ = p.conn.Close()
	}
}

// Close lets go of the Pods API connection, if the client made one.
func (c *Client) Close() {
	if c.podsAPI != nil {
		c.podsAPI.close()
	}
}

// PodsAPIError says why the Pods API socket was not used or did not answer: what the client saw
// (Reason) and what a user must do about it (Fix), in the terms of Options.Names.
type PodsAPIError struct {
	Socket, Reason, Fix string
	// Refused says the client would not connect: the socket is not where only the kubelet could
	// have put it.
	Refused bool
	// Code is the kubelet's gRPC status, when it answered.
	Code codes.Code
	Err  error
}

func (e *PodsAPIError) Error() string {
	msg := "the Pods API socket " + e.Socket + ": " + e.Reason
	if e.Refused {
		msg = "refusing the Pods API socket " + e.Socket + ": " + e.Reason
	}
	if e.Fix != "" {
		msg += ". " + e.Fix
	}
	return msg
}

func (e *PodsAPIError) Unwrap() error { return e.Err }

// PodsAPIFor says whether the client reads node's pods through the Pods API socket: always with
// ViaPodsAPI; with ViaAuto when node is Options.OwnNode and the socket is there and trusted, and
// otherwise skipped says why, when node is the client's own (nil for another node, or when the
// client does not know which node it runs on: there is no socket to consider).
func (c *Client) PodsAPIFor(node string) (use bool, skipped error) {
	switch {
	case c.opts.Via == ViaPodsAPI:
		return true, nil
	case c.opts.Via != ViaAuto || c.opts.OwnNode == "" || c.opts.OwnNode != node:
		return false, nil
	}
	if err := c.podsAPIProblem(CheckPodsAPISocket(c.opts.PodsAPISocket)); err != nil {
		return false, err
	}
	return true, nil
}

// ListPods lists node's pods through the Pods API socket (ListPods), whatever Options.Via says
// but ViaKubelet and ViaAPIServer, which have no socket. The kubelet there answers for its own
// node: a pod bound to another node says the socket is another kubelet's.
func (c *Client) ListPods(ctx context.Context, node string) Result {
	return c.viaPodsAPI(ctx, node, podsEndpoint)
}

func (c *Client) viaPodsAPI(ctx context.Context, node string, ep ReadEndpoint) Result {
	r := Result{Node: node, Via: string(ViaPodsAPI), URL: "unix://" + c.opts.PodsAPISocket}
	if ep != podsEndpoint {
		r.Err = fmt.Errorf("the Pods API serves pods only (ListPods, GetPod, WatchPods), not /%s: ask the kubelet over HTTPS (%s)", ep.Path, c.opts.Names.set("Via", "kubelet"))
		return r
	}
	if c.podsAPI == nil {
		r.Err = fmt.Errorf("this client does not read the Pods API (%s)", c.opts.Names.set("Via", string(c.opts.Via)))
		return r
	}
	client, err := c.podsAPI.client()
	if err != nil {
		r.Err = err
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := client.ListPods(ctx, &podsv1alpha1.ListPodsRequest{}, grpc.MaxCallRecvMsgSize(int(min(c.opts.MaxResponseBytes, int64(^uint32(0)>>1)))))
	if err != nil {
		r.Err = c.podsAPIProblem(c.rpcError(err))
		return r
	}
	r.Pods = make([]corev1.Pod, len(resp.Pods))
	for i, data := range resp.Pods {
		if err := r.Pods[i].Unmarshal(data); err != nil {
			r.Pods, r.Err = nil, fmt.Errorf("decode pod %d of the Pods API's answer: %w", i, err)
			return r
		}
	}
	if err := c.sameNode(node, r.Pods); err != nil {
		r.Pods, r.Err = nil, err
	}
	klog.FromContext(ctx).V(2).Info("Pods API answered", "socket", c.opts.PodsAPISocket, "pods", len(r.Pods))
	return r
}

// sameNode refuses pods bound to another node than the one asked: the socket is that node's kubelet's.
func (c *Client) sameNode(node string, pods []corev1.Pod) error {
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.Spec.NodeName != node {
			return &PodsAPIError{Socket: c.opts.PodsAPISocket, Reason: fmt.Sprintf("its kubelet runs node %s, not %s (pod %s/%s)", p.Spec.NodeName, node, p.Namespace, p.Name),
				Fix: "the Pods API answers for the node it is on: ask " + p.Spec.NodeName + ", or ask " + node + " over HTTPS (" + c.opts.Names.set("Via", "kubelet") + ")"}
		}
	}
	return nil
}

// rpcError turns a failed call into what the client saw: the dialer's own error when gRPC could
// not connect, the kubelet's status otherwise.
func (c *Client) rpcError(err error) error {
	st, _ := status.FromError(err)
	if st.Code() == codes.Unavailable {
		c.podsAPI.mu.Lock()
		dialErr := c.podsAPI.lastDial
		c.podsAPI.mu.Unlock()
		if dialErr != nil {
			return dialErr
		}
	}
	e := &PodsAPIError{Socket: c.opts.PodsAPISocket, Reason: st.Code().String() + ": " + st.Message(), Code: st.Code(), Err: err}
	switch st.Code() {
	case codes.FailedPrecondition:
		e.Fix = "the kubelet answers once its pod sources (the static pod directory, the apiserver) are ready: ask again in a few seconds"
	case codes.ResourceExhausted:
		e.Fix = "the kubelet allows 100 calls a second (bursts of 10) and drops a watcher that falls 100 events behind: ask less often, or watch (WatchPods) instead of polling"
		if strings.Contains(st.Message(), "larger than max") { // gRPC's own limit, set to ours
			e.Fix = fmt.Sprintf("the answer is longer than %d bytes, the most this client reads (%s): not read", c.opts.MaxResponseBytes, c.opts.Names.name("MaxResponseBytes"))
		}
	case codes.Unimplemented:
		e.Fix = "whatever listens there does not serve the Pods API v1alpha1 (a kubelet older than v1.36?)"
	case codes.DeadlineExceeded:
		e.Fix = fmt.Sprintf("no answer within %s (%s)", c.opts.Timeout, c.opts.Names.name("Timeout"))
	}
	return e
}

// podsAPIProblem says, for what went wrong on the way to the socket, what a user must fix, in
// the terms of Options.Names. Errors of other kinds are returned as they are.
func (c *Client) podsAPIProblem(err error) error {
	if err == nil {
		return nil
	}
	socket, dir := c.opts.PodsAPISocket, filepath.Dir(c.opts.PodsAPISocket)
	var pe *PodsAPIError
	if errors.As(err, &pe) {
		return pe // already said
	}
	e := &PodsAPIError{Socket: socket, Err: err}
	_, dirErr := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && errors.Is(dirErr, fs.ErrNotExist):
		elsewhere := "its socket elsewhere"
		if filepath.Base(dir) == "pods-api" {
			elsewhere = "its --root-dir not " + filepath.Dir(dir)
		}
		e.Reason = "no directory " + dir
		e.Fix = "The kubelet makes it when it serves the Pods API: is its PodsAPI feature gate off (beta, on by default since v1.37), the kubelet older than v1.36, or " +
			elsewhere + " (then name its socket with " + c.opts.Names.name("PodsAPISocket") + ")? In a pod, mount the hostPath " + filepath.Dir(DefaultPodsAPISocket) + " at " + dir
	case errors.Is(err, fs.ErrNotExist):
		e.Reason = "no socket in " + dir
		e.Fix = "The kubelet is not serving its Pods API there: its PodsAPI feature gate is off (featureGates: {PodsAPI: true} turns it on), or it has not started. " +
			"In a pod, " + dir + " must be the node's " + filepath.Dir(DefaultPodsAPISocket) + " (a hostPath volume), not a directory of the pod's own"
	case errors.Is(err, fs.ErrPermission):
		e.Reason = "permission denied (" + err.Error() + ")"
		e.Fix = "The kubelet's socket and its directory are root's (mode 0750 and 0755 under systemd), and connecting needs write permission on the socket: run as root (in a pod, runAsUser: 0)"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Reason = "nothing listens on it"
		e.Fix = "The kubelet that made it has stopped, or is starting: ask again once it runs (systemctl status kubelet on the node)"
	default:
		return err
	}
	return e
}

// PodEventType is what a PodEvent says.
type PodEventType string

const (
	// PodAdded, PodModified and PodDeleted are the kubelet's events: a pod it has, first for each
	// pod it has when the watch starts, then as pods come, change and go.
	PodAdded    PodEventType = "ADDED"
	PodModified PodEventType = "MODIFIED"
	PodDeleted  PodEventType = "DELETED"
	// PodsSynced follows the ADDED event of every pod the kubelet had when the watch started
	// (INITIAL_SYNC_COMPLETE): the pods received since the watch (re)started are all of them.
	PodsSynced PodEventType = "INITIAL_SYNC_COMPLETE"
	// PodsBroken says the stream ended (Err says why) or could not start: the client watches
	// again, and the kubelet starts over with an ADDED event for each pod it has.
	PodsBroken PodEventType = "BROKEN"
)

// PodEvent is one event of WatchPods.
type PodEvent struct {
	Type PodEventType
	// Pod is the pod, for ADDED, MODIFIED and DELETED (the kubelet sends only its namespace, name
	// and UID with DELETED).
	Pod *corev1.Pod
	// Err says why the stream broke, for PodsBroken.
	Err error
}

// Rewatch bounds how long WatchPods waits before it watches again after a broken stream: it waits
// a second, then twice as long each time up to this, and a second again once a watch has synced.
var Rewatch = 30 * time.Second

// WatchPods follows node's pods through the Pods API until ctx ends, handing each event to handle
// (one at a time, in order). A broken stream is handed over as PodsBroken and watched again; the
// kubelet then starts over with every pod it has, and PodsSynced. It needs ViaPodsAPI, or
// ViaAuto on the client's own node (PodsAPIFor); it returns ctx's error once ctx ends, or at once
// the error that keeps it from watching at all.
func (c *Client) WatchPods(ctx context.Context, node string, handle func(PodEvent)) error {
	if use, skipped := c.PodsAPIFor(node); !use {
		if skipped != nil {
			return skipped
		}
		return fmt.Errorf("the Pods API answers on its node only: this client reads node %s another way (%s, %s)", node, c.opts.Names.set("Via", string(c.opts.Via)), c.opts.Names.set("OwnNode", c.opts.OwnNode))
	}
	client, err := c.podsAPI.client()
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	wait := time.Second
	for {
		synced, err := c.watchOnce(ctx, client, node, handle)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if synced {
			wait = time.Second
		}
		logger.V(1).Info("Pods API watch broken, watching again", "socket", c.opts.PodsAPISocket, "err", err, "in", wait)
		handle(PodEvent{Type: PodsBroken, Err: err})
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, Rewatch)
	}
}

// watchOnce runs one WatchPods stream to its end; synced says the kubelet got as far as
// INITIAL_SYNC_COMPLETE.
func (c *Client) watchOnce(ctx context.Context, client podsv1alpha1.PodsClient, node string, handle func(PodEvent)) (synced bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.WatchPods(ctx, &podsv1alpha1.WatchPodsRequest{}, grpc.MaxCallRecvMsgSize(int(min(c.opts.MaxResponseBytes, int64(^uint32(0)>>1)))))
	if err != nil {
		return false, c.podsAPIProblem(c.rpcError(err))
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return synced, c.podsAPIProblem(c.rpcError(err))
		}
		e := PodEvent{}
		switch ev.Type {
		case podsv1alpha1.EventType_ADDED:
			e.Type = PodAdded
		case podsv1alpha1.EventType_MODIFIED:
			e.Type = PodModified
		case podsv1alpha1.EventType_DELETED:
			e.Type = PodDeleted
		case podsv1alpha1.EventType_INITIAL_SYNC_COMPLETE:
			synced = true
			handle(PodEvent{Type: PodsSynced})
			continue
		default:
			return synced, fmt.Errorf("the Pods API sent an event of unknown type %s", ev.Type)
		}
		e.Pod = &corev1.Pod{}
		if err := e.Pod.Unmarshal(ev.Pod); err != nil {
			return synced, fmt.Errorf("decode the pod of a %s event: %w", e.Type, err)
		}
		if err := c.sameNode(node, []corev1.Pod{*e.Pod}); err != nil {
			return synced, err
		}
		handle(e)
	}
}
