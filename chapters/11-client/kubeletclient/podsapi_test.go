package kubeletclient_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// listen puts a listening unix socket at path, as a kubelet (or someone else) would.
func listen(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
}

// The socket is believed only where no one but root and this user could have put it: every
// directory on the way and every symbolic link followed, checked as the kernel resolves the path.
func TestCheckPodsAPISocket(t *testing.T) {
	root := os.Getuid() == 0
	tests := []struct {
		name string
		// setup makes what the test needs in dir (only this user's) and returns the path to check.
		setup    func(t *testing.T, dir string) string
		wantErr  string
		notExist bool
		asRoot   bool // chown needs root
	}{
		{name: "a socket in a directory of mine", setup: func(t *testing.T, dir string) string {
			listen(t, fakecluster.SocketIn(dir))
			return fakecluster.SocketIn(dir)
		}},
		{name: "planted in a directory others can write", setup: func(t *testing.T, dir string) string {
			open := filepath.Join(dir, "open")
			require.NoError(t, os.Mkdir(open, 0o700))
			require.NoError(t, os.Chmod(open, 0o777))
			listen(t, fakecluster.SocketIn(open))
			return fakecluster.SocketIn(open)
		}, wantErr: "is writable by other users (drwxrwxrwx)"},
		{name: "a directory its group can write", setup: func(t *testing.T, dir string) string {
			group := filepath.Join(dir, "group")
			require.NoError(t, os.Mkdir(group, 0o700))
			require.NoError(t, os.Chmod(group, 0o770))
			listen(t, fakecluster.SocketIn(group))
			return fakecluster.SocketIn(group)
		}, wantErr: "chmod go-w "},
		{name: "my own directory in a sticky one, as in /tmp", setup: func(t *testing.T, dir string) string {
			sticky := filepath.Join(dir, "sticky")
			require.NoError(t, os.Mkdir(sticky, 0o700))
			require.NoError(t, os.Chmod(sticky, 0o777|fs.ModeSticky))
			mine := filepath.Join(sticky, "mine")
			require.NoError(t, os.Mkdir(mine, 0o700))
			listen(t, fakecluster.SocketIn(mine))
			return fakecluster.SocketIn(mine)
		}},
		{name: "someone else's directory in a sticky one", asRoot: true, setup: func(t *testing.T, dir string) string {
			sticky := filepath.Join(dir, "sticky")
			require.NoError(t, os.Mkdir(sticky, 0o700))
			require.NoError(t, os.Chmod(sticky, 0o777|fs.ModeSticky))
			theirs := filepath.Join(sticky, "theirs")
			require.NoError(t, os.Mkdir(theirs, 0o755))
			listen(t, fakecluster.SocketIn(theirs))
			require.NoError(t, os.Chown(theirs, 4242, 4242))
			return fakecluster.SocketIn(theirs)
		}, wantErr: "theirs belongs to the user 4242, neither root nor you"},
		{name: "someone else's socket", asRoot: true, setup: func(t *testing.T, dir string) string {
			listen(t, fakecluster.SocketIn(dir))
			require.NoError(t, os.Lchown(fakecluster.SocketIn(dir), 4242, 4242))
			return fakecluster.SocketIn(dir)
		}, wantErr: "pods-api.sock belongs to the user 4242"},
		{name: "not a socket", setup: func(t *testing.T, dir string) string {
			require.NoError(t, os.WriteFile(fakecluster.SocketIn(dir), nil, 0o600))
			return fakecluster.SocketIn(dir)
		}, wantErr: "pods-api.sock is not a socket (-rw-------)"},
		{name: "a link of mine to my socket", setup: func(t *testing.T, dir string) string {
			listen(t, fakecluster.SocketIn(dir))
			link := filepath.Join(dir, "link.sock")
			require.NoError(t, os.Symlink("pods-api.sock", link))
			return link
		}},
		{name: "a link of mine into a directory others can write", setup: func(t *testing.T, dir string) string {
			open := filepath.Join(dir, "open")
			require.NoError(t, os.Mkdir(open, 0o700))
			require.NoError(t, os.Chmod(open, 0o777))
			listen(t, fakecluster.SocketIn(open))
			link := filepath.Join(dir, "link.sock")
			require.NoError(t, os.Symlink(fakecluster.SocketIn(open), link))
			return link
		}, wantErr: "open is writable by other users"},
		{name: "someone else's link in a sticky directory", asRoot: true, setup: func(t *testing.T, dir string) string {
			listen(t, fakecluster.SocketIn(dir))
			sticky := filepath.Join(dir, "sticky")
			require.NoError(t, os.Mkdir(sticky, 0o700))
			require.NoError(t, os.Chmod(sticky, 0o777|fs.ModeSticky))
			link := filepath.Join(sticky, "link.sock")
			require.NoError(t, os.Symlink(fakecluster.SocketIn(dir), link))
			require.NoError(t, os.Lchown(link, 4242, 4242))
			return link
		}, wantErr: "link.sock belongs to the user 4242"},
		{name: "a loop of links", setup: func(t *testing.T, dir string) string {
			require.NoError(t, os.Symlink("b", filepath.Join(dir, "a")))
			require.NoError(t, os.Symlink("a", filepath.Join(dir, "b")))
			return filepath.Join(dir, "a")
		}, wantErr: "too many levels of symbolic links"},
		{name: "no socket", setup: func(_ *testing.T, dir string) string { return fakecluster.SocketIn(dir) }, notExist: true},
		{name: "no directory", setup: func(_ *testing.T, dir string) string { return fakecluster.SocketIn(filepath.Join(dir, "pods-api")) }, notExist: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.asRoot && !root {
				tier.Unavailable(t, "root", errors.New("giving a file to another user needs root"))
			}
			path := tt.setup(t, fakecluster.PodsAPIDir(t))
			err := kubeletclient.CheckPodsAPISocket(path)
			switch {
			case tt.notExist:
				assert.ErrorIs(t, err, fs.ErrNotExist)
			case tt.wantErr == "":
				assert.NoError(t, err)
			default:
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				var pe *kubeletclient.PodsAPIError
				if errors.As(err, &pe) {
					assert.True(t, pe.Refused, "a refusal, not a failure: %v", err)
				}
			}
		})
	}
}

func pod(name, node string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

var podsAPINames = kubeletclient.Names{"Via": "--via", "PodsAPISocket": "--pods-api-socket"}

// --via=podsapi: ListPods on the socket, no apiserver, no credentials; and each way it fails,
// with what to do.
func TestPodsAPIListPods(t *testing.T) {
	dir := fakecluster.PodsAPIDir(t)
	api := fakecluster.NewPodsAPI(t, fakecluster.SocketIn(dir), pod("web", "n1"), pod("db", "n1"))
	root := os.Getuid() == 0
	tests := []struct {
		name, node, socket string
		fail               error
		want               []string
		wantErr            []string
	}{
		{name: "its own node", node: "n1", socket: api.Socket, want: []string{"web", "db"}},
		{name: "a link, whose path is longer than a socket's may be", node: "n1", socket: func() string {
			long := filepath.Join(dir, "a-directory-with-a-long-name-0123456789", "and-another-one-0123456789-0123456789-0123456789")
			require.NoError(t, os.MkdirAll(long, 0o700))
			link := filepath.Join(long, "pods-api.sock")
			require.Greater(t, len(link), 108)
			require.NoError(t, os.Symlink(api.Socket, link))
			return link
		}(), want: []string{"web", "db"}},
		{name: "another node", node: "n2", socket: api.Socket,
			wantErr: []string{"its kubelet runs node n1, not n2 (pod default/web)", "ask n1, or ask n2 over HTTPS (--via=kubelet)"}},
		{name: "the kubelet starting", node: "n1", socket: api.Socket, fail: status.Error(codes.FailedPrecondition, "Kubelet is initializing"),
			wantErr: []string{"FailedPrecondition: Kubelet is initializing", "ask again in a few seconds"}},
		{name: "rate-limited", node: "n1", socket: api.Socket, fail: status.Error(codes.ResourceExhausted, "rejected by rate limit"),
			wantErr: []string{"rejected by rate limit", "100 calls a second"}},
		{name: "the gate off: no socket", node: "n1", socket: fakecluster.SocketIn(fakecluster.PodsAPIDir(t)),
			wantErr: []string{"no socket in ", "its PodsAPI feature gate is off (featureGates: {PodsAPI: true} turns it on)", "a hostPath volume"}},
		{name: "no directory: the hostPath not mounted", node: "n1", socket: filepath.Join(dir, "nowhere", "pods-api.sock"),
			wantErr: []string{"no directory " + filepath.Join(dir, "nowhere"), "is its PodsAPI feature gate off", "name its socket with --pods-api-socket", "mount the hostPath /var/lib/kubelet/pods-api at"}},
		{name: "a socket nobody serves", node: "n1", socket: func() string {
			d := fakecluster.PodsAPIDir(t)
			l, err := net.Listen("unix", fakecluster.SocketIn(d))
			require.NoError(t, err)
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			require.NoError(t, l.Close())
			return fakecluster.SocketIn(d)
		}(), wantErr: []string{"nothing listens on it", "has stopped"}},
	}
	if !root {
		tests = append(tests, struct {
			name, node, socket string
			fail               error
			want               []string
			wantErr            []string
		}{name: "a directory only root may read", node: "n1", socket: func() string {
			d := fakecluster.PodsAPIDir(t)
			locked := filepath.Join(d, "locked")
			require.NoError(t, os.Mkdir(locked, 0o700))
			require.NoError(t, os.Chmod(locked, 0))
			t.Cleanup(func() { _ = os.Chmod(locked, 0o700) })
			return fakecluster.SocketIn(locked)
		}(), wantErr: []string{"permission denied", "run as root (in a pod, runAsUser: 0)"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api.Fail(tt.fail)
			c, err := kubeletclient.New(nil, kubeletclient.Options{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: tt.socket, Names: podsAPINames})
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, kubeletclient.PodsAPICredentials, c.Credentials)
			r := c.Get(context.Background(), tt.node, kubeletclient.ReadEndpoints["pods"])
			assert.Equal(t, "podsapi", r.Via)
			assert.Equal(t, "unix://"+tt.socket, r.URL)
			if len(tt.wantErr) > 0 {
				require.Error(t, r.Err)
				for _, w := range tt.wantErr {
					assert.Contains(t, r.Err.Error(), w)
				}
				return
			}
			require.NoError(t, r.Err)
			var names []string
			for _, p := range r.Pods {
				names = append(names, p.Name)
			}
			assert.Equal(t, tt.want, names)
		})
	}

	c, err := kubeletclient.New(nil, kubeletclient.Options{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: api.Socket, Names: podsAPINames})
	require.NoError(t, err)
	defer c.Close()
	r := c.Get(context.Background(), "n1", kubeletclient.ReadEndpoints["stats/summary"])
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "the Pods API serves pods only (ListPods, GetPod, WatchPods), not /stats/summary: ask the kubelet over HTTPS (--via=kubelet)")

	small, err := kubeletclient.New(nil, kubeletclient.Options{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: api.Socket, MaxResponseBytes: 10})
	require.NoError(t, err)
	defer small.Close()
	r = small.Get(context.Background(), "n1", kubeletclient.ReadEndpoints["pods"])
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "the answer is longer than 10 bytes, the most this client reads (Options.MaxResponseBytes): not read")
}

// --via=auto takes the socket for its own node only, and says why when it did not.
func TestPodsAPIAuto(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	k := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1"), Pods: []corev1.Pod{pod("over-https", "n1")}})
	a.SetNodes(fakecluster.Node("n1", k.Port), fakecluster.Node("n2", k.Port))
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}}
	api := fakecluster.NewPodsAPI(t, fakecluster.SocketIn(fakecluster.PodsAPIDir(t)), pod("over-the-socket", "n1"))
	absent := fakecluster.SocketIn(fakecluster.PodsAPIDir(t))
	tests := []struct {
		name, ownNode, node, socket string
		fail                        error
		wantVia, wantPod, skipped   string
	}{
		{name: "its own node", ownNode: "n1", node: "n1", socket: api.Socket, wantVia: "podsapi", wantPod: "over-the-socket"},
		{name: "another node", ownNode: "n1", node: "n2", socket: api.Socket, wantVia: "kubelet", wantPod: "over-https"},
		{name: "no node known", node: "n1", socket: api.Socket, wantVia: "kubelet", wantPod: "over-https"},
		{name: "its own node, no socket", ownNode: "n1", node: "n1", socket: absent, wantVia: "kubelet", wantPod: "over-https", skipped: "no socket in"},
		{name: "its own node, the socket failing", ownNode: "n1", node: "n1", socket: api.Socket, fail: status.Error(codes.FailedPrecondition, "Kubelet is initializing"),
			wantVia: "kubelet", wantPod: "over-https", skipped: "Kubelet is initializing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api.Fail(tt.fail)
			opts := options(p, t)
			opts.Via, opts.OwnNode, opts.PodsAPISocket = kubeletclient.ViaAuto, tt.ownNode, tt.socket
			c, err := kubeletclient.New(cfg, opts)
			require.NoError(t, err)
			defer c.Close()
			r := c.Get(context.Background(), tt.node, kubeletclient.ReadEndpoints["pods"])
			require.NoError(t, r.Err)
			assert.Equal(t, tt.wantVia, r.Via)
			require.Len(t, r.Pods, 1)
			assert.Equal(t, tt.wantPod, r.Pods[0].Name)
			if tt.skipped == "" {
				assert.NoError(t, r.PodsAPISkipped)
			} else {
				assert.ErrorContains(t, r.PodsAPISkipped, tt.skipped)
			}
		})
	}
}

// events collects what WatchPods hands over.
type events struct {
	mu  sync.Mutex
	all []string
}

func (e *events) add(ev kubeletclient.PodEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := string(ev.Type)
	if ev.Pod != nil {
		s += " " + ev.Pod.Name
	}
	e.all = append(e.all, s)
}

func (e *events) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.all...)
}

// WatchPods: the pods the kubelet has, INITIAL_SYNC_COMPLETE, each change; a broken stream is said
// and watched again, and the kubelet starts over.
func TestWatchPods(t *testing.T) {
	api := fakecluster.NewPodsAPI(t, fakecluster.SocketIn(fakecluster.PodsAPIDir(t)), pod("web", "n1"))
	c, err := kubeletclient.New(nil, kubeletclient.Options{Via: kubeletclient.ViaPodsAPI, PodsAPISocket: api.Socket})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got events
	done := make(chan error, 1)
	go func() { done <- c.WatchPods(ctx, "n1", got.add) }()

	waitFor := func(want ...string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Equal(c, want, got.get()) }, 10*time.Second, 10*time.Millisecond)
	}
	waitFor("ADDED web", "INITIAL_SYNC_COMPLETE")
	require.NoError(t, api.Send(podsv1alpha1.EventType_ADDED, pod("db", "n1")))
	require.NoError(t, api.Send(podsv1alpha1.EventType_MODIFIED, pod("web", "n1")))
	require.NoError(t, api.Send(podsv1alpha1.EventType_DELETED, pod("db", "n1")))
	waitFor("ADDED web", "INITIAL_SYNC_COMPLETE", "ADDED db", "MODIFIED web", "DELETED db")

	api.SetPods(pod("web", "n1"), pod("cache", "n1"))
	api.Break(status.Error(codes.ResourceExhausted, "watch client channel closed"))
	waitFor("ADDED web", "INITIAL_SYNC_COMPLETE", "ADDED db", "MODIFIED web", "DELETED db",
		"BROKEN", "ADDED web", "ADDED cache", "INITIAL_SYNC_COMPLETE")
	assert.Equal(t, []string{"WatchPods", "WatchPods"}, api.Calls())

	require.NoError(t, api.Send(podsv1alpha1.EventType_MODIFIED, pod("other", "n2")))
	require.Eventually(t, func() bool { return len(got.get()) == 10 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "BROKEN", got.get()[9], "a pod of another node: this is not its kubelet")

	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}
