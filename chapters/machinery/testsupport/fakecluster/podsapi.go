package fakecluster

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"
)

// PodsAPI is a fake of the kubelet's Pods API (v1alpha1) on a unix socket: ListPods answers the
// pods it holds; WatchPods sends an ADDED event for each, INITIAL_SYNC_COMPLETE, then what Send
// sends, until Break ends every stream. It records the calls it received. Against the real
// kubelet's: e2e/client.
type PodsAPI struct {
	podsv1alpha1.UnimplementedPodsServer
	Socket string

	mu       sync.Mutex
	pods     []corev1.Pod
	fail     error
	calls    []string
	watchers map[chan *podsv1alpha1.WatchPodsEvent]chan error
}

// NewPodsAPI serves a fake Pods API at socket, whose directory must exist, until the test ends.
func NewPodsAPI(t testing.TB, socket string, pods ...corev1.Pod) *PodsAPI {
	t.Helper()
	p := &PodsAPI{Socket: socket, pods: pods, watchers: map[chan *podsv1alpha1.WatchPodsEvent]chan error{}}
	l, err := net.Listen("unix", socket)
	must(t, err)
	srv := grpc.NewServer()
	podsv1alpha1.RegisterPodsServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		p.Break(status.Error(codes.Unavailable, "the test ended"))
		srv.Stop()
		_ = os.Remove(socket)
	})
	return p
}

// PodsAPIDir makes a directory for a socket, only this user's, with a name short enough for one
// (a unix socket's path is at most 107 bytes; a test's temporary directory can be long).
func PodsAPIDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pods-api-")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// SocketIn is dir's socket, pods-api.sock, as the kubelet names it.
func SocketIn(dir string) string { return filepath.Join(dir, "pods-api.sock") }

// Calls are the methods called so far ("ListPods", "WatchPods").
func (p *PodsAPI) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// Fail makes every call fail with err (a gRPC status), or succeed again with nil.
func (p *PodsAPI) Fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = err
}

// SetPods replaces the pods ListPods and a new watch start with.
func (p *PodsAPI) SetPods(pods ...corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods = pods
}

// Send sends an event to every watch.
func (p *PodsAPI) Send(t podsv1alpha1.EventType, pod corev1.Pod) error {
	data, err := pod.Marshal()
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for events := range p.watchers {
		events <- &podsv1alpha1.WatchPodsEvent{Type: t, Pod: data}
	}
	return nil
}

// Break ends every open watch with err.
func (p *PodsAPI) Break(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for events, ended := range p.watchers {
		ended <- err
		delete(p.watchers, events)
	}
}

func (p *PodsAPI) begin(call string) ([]corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
	return append([]corev1.Pod(nil), p.pods...), p.fail
}

func (p *PodsAPI) ListPods(context.Context, *podsv1alpha1.ListPodsRequest) (*podsv1alpha1.ListPodsResponse, error) {
	pods, err := p.begin("ListPods")
	if err != nil {
		return nil, err
	}
	resp := &podsv1alpha1.ListPodsResponse{}
	for _, pod := range pods {
		data, err := pod.Marshal()
		if err != nil {
			return nil, err
		}
		resp.Pods = append(resp.Pods, data)
	}
	return resp, nil
}

func (p *PodsAPI) WatchPods(_ *podsv1alpha1.WatchPodsRequest, stream grpc.ServerStreamingServer[podsv1alpha1.WatchPodsEvent]) error {
	pods, err := p.begin("WatchPods")
	if err != nil {
		return err
	}
	events, ended := make(chan *podsv1alpha1.WatchPodsEvent, 100), make(chan error, 1)
	p.mu.Lock()
	p.watchers[events] = ended
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.watchers, events)
		p.mu.Unlock()
	}()
	for _, pod := range pods {
		data, err := pod.Marshal()
		if err != nil {
			return err
		}
		if err := stream.Send(&podsv1alpha1.WatchPodsEvent{Type: podsv1alpha1.EventType_ADDED, Pod: data}); err != nil {
			return err
		}
	}
	if err := stream.Send(&podsv1alpha1.WatchPodsEvent{Type: podsv1alpha1.EventType_INITIAL_SYNC_COMPLETE}); err != nil {
		return err
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case err := <-ended:
			if err == nil {
				err = errors.New("broken")
			}
			return err
		case e := <-events:
			if err := stream.Send(e); err != nil {
				return err
			}
		}
	}
}
