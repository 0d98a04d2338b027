package toykubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet/server"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/06-static-pods/staticpods"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
)

// StartOptions say which toy kubelet to start.
type StartOptions struct {
	NodeName      types.NodeName
	StaticPodPath string
	// Address is where both servers listen; default 127.0.0.1.
	Address string
	// ReadOnlyPort and SecurePort: 0 picks a free port, negative disables the server, a
	// positive port must be free. The secure server runs only with TLSConfig and Auth: without
	// them it would be plain HTTP for everyone, as the real server is without them, so it is off
	// (and a positive SecurePort is an error).
	ReadOnlyPort, SecurePort int
	TLSConfig                *tls.Config
	Auth                     server.AuthInterface
	// FileCheckFrequency is the static pod path's re-list period; default 20s, as the kubelet's.
	FileCheckFrequency time.Duration
}

// Running is a toy kubelet started as startKubelet starts the real one.
type Running struct {
	*Kubelet
	PodConfig   *staticpods.PodConfig
	ReadOnlyURL string
	SecureURL   string
	RootDir     string

	cancel     context.CancelFunc
	unregister func()
	wg         sync.WaitGroup
	once       sync.Once
}

// Start makes a toy kubelet and starts it the way the real one is started: createAndInitKubelet
// calls BirthCry and StartGarbageCollection (cmd/kubelet/app/server.go#L1398-L1400 (k.BirthCry())),
// then startKubelet starts the sync loop and the servers, each in its goroutine
// (cmd/kubelet/app/server.go#L1341-L1355 (func startKubelet)).
func Start(ctx context.Context, opts StartOptions) (*Running, error) {
	if opts.Address == "" {
		opts.Address = "127.0.0.1"
	}
	if opts.FileCheckFrequency == 0 {
		opts.FileCheckFrequency = 20 * time.Second
	}
	readOnlyPort, err := pickPort(opts.Address, opts.ReadOnlyPort)
	if err != nil {
		return nil, err
	}
	if opts.TLSConfig == nil || opts.Auth == nil {
		if opts.SecurePort > 0 {
			return nil, fmt.Errorf("secure port %d: the toy kubelet serves it only with TLSConfig and Auth", opts.SecurePort)
		}
		opts.SecurePort = -1
	}
	securePort, err := pickPort(opts.Address, opts.SecurePort)
	if err != nil {
		return nil, err
	}
	config, err := options.NewKubeletConfiguration()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "toy-kubelet-")
	if err != nil {
		return nil, err
	}
	config.Address, config.Port, config.ReadOnlyPort = opts.Address, int32(securePort), int32(readOnlyPort)
	config.EnableServer = securePort > 0
	config.StaticPodPath, config.FileCheckFrequency.Duration = opts.StaticPodPath, opts.FileCheckFrequency

	r := &Running{
		Kubelet:   New(Options{NodeName: opts.NodeName, RootDir: root, Config: *config}),
		PodConfig: staticpods.NewPodConfig(opts.StaticPodPath, opts.NodeName, opts.FileCheckFrequency),
		RootDir:   root,
		// Should the real kubelet beside it end the process (chapter 05), the root goes too.
		unregister: kubeletlog.AtExit(func() { _ = os.RemoveAll(root) }),
	}
	ctx, r.cancel = context.WithCancel(ctx)
	goStart := func(f func()) { r.wg.Go(f) }

	goStart(func() { r.PodConfig.Run(ctx) })
	// createAndInitKubelet:
	r.BirthCry()
	r.StartGarbageCollection(ctx)
	// startKubelet:
	goStart(func() { r.Run(ctx, r.PodConfig.Updates()) })
	if config.EnableServer {
		goStart(func() { r.ListenAndServe(ctx, config, opts.TLSConfig, opts.Auth, nil) })
		r.SecureURL = "https://" + net.JoinHostPort(opts.Address, strconv.Itoa(securePort))
	}
	if config.ReadOnlyPort > 0 {
		goStart(func() { r.ListenAndServeReadOnly(ctx, net.ParseIP(opts.Address), uint(readOnlyPort), nil) })
		r.ReadOnlyURL = "http://" + net.JoinHostPort(opts.Address, strconv.Itoa(readOnlyPort))
	}
	goStart(func() { r.ListenAndServePodResources(ctx) })
	goStart(func() { r.ListenAndServePods(ctx) })

	for _, port := range []int{readOnlyPort, securePort} {
		if port > 0 {
			if err := waitListening(ctx, net.JoinHostPort(opts.Address, strconv.Itoa(port))); err != nil {
				r.Stop()
				return nil, err
			}
		}
	}
	klog.FromContext(ctx).V(1).Info("Toy kubelet started", "node", opts.NodeName, "readOnly", r.ReadOnlyURL, "secure", r.SecureURL)
	return r, nil
}

// Stop ends every goroutine Start began, waits for them, and removes the root directory.
func (r *Running) Stop() {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		_ = os.RemoveAll(r.RootDir)
		r.unregister()
	})
}

// pickPort returns 0 (disabled) for a negative want, want when it is free on host — a port in
// use would leave the toy's server failing in its goroutine while another program answers at
// its URL — and a free port for 0.
func pickPort(host string, want int) (int, error) {
	if want < 0 {
		return 0, nil
	}
	if want > 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(want)))
		if err != nil {
			return 0, fmt.Errorf("the toy kubelet's port: %w", err)
		}
		return want, l.Close()
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("toy kubelet did not listen on %s: %w", addr, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
