// Package realkubelet starts the real k8s.io/kubernetes kubelet inside the calling process,
// through the door the kubelet binary takes after flag parsing (app.RunKubelet), with what a
// laptop lacks — a container runtime, cAdvisor, cgroups — replaced by the kubelet's own stand-ins:
// a hollow node (hollow.go). notes/04-runkubelet.md follows the source; what a caller must know is
// here.
//
// The secure port runs only with Webhook (anonymous requests refused): it serves /logs/ (this
// machine's /var/log, with this process's rights), /debug/pprof and PUT /debug/flags/v, so its
// TLS options and authentication are built as the kubelet binary builds them (app.InitializeTLS,
// app.BuildAuth). The read-only port, which serves none of those, listens on loopback unless
// Address says otherwise.
//
// Known limits of v1.37.2: after Stop the HTTP servers keep their ports until the process exits
// (so ports are chosen here, once per process, never handed out twice), a listen failure makes the
// kubelet call os.Exit(1) (its last log line is then told on the terminal and its files removed
// first: lastwords.go), and the pod workers go on syncing, making their pods' directories again —
// a process that goes on after Stop calls RemoveRootDirs last.
package realkubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/component-base/configz"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletconfigconversion "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
)

// DefaultNodeName is the node name used when Options.NodeName is empty.
const DefaultNodeName = "walkthrough"

// Options say which kubelet to start. The zero value starts a standalone kubelet named
// DefaultNodeName with a read-only port on 127.0.0.1 chosen at run time, and no secure port:
// the secure port runs only with Webhook.
type Options struct {
	// NodeName is the kubelet's --hostname-override.
	NodeName string
	// StaticPodPath is the directory of static pod manifests (staticPodPath); empty means none.
	StaticPodPath string
	// Address is the bind address of both HTTP servers. Default 127.0.0.1.
	Address string
	// NodeIP is the kubelet's --node-ip. Only meaningful with a KubeClient.
	NodeIP string
	// ReadOnlyPort: 0 picks a free port, a negative value disables the read-only server.
	ReadOnlyPort int
	// SecurePort is the HTTPS server's port, which runs only with Webhook: then 0 picks a free
	// port and a negative value disables it. Without Webhook the server is off, and a positive
	// SecurePort is an error.
	SecurePort int

	// TLSCertFile and TLSKeyFile are the secure port's serving certificate. When both are
	// empty, app.InitializeTLS writes a self-signed one into the kubelet's cert directory, as the
	// real kubelet does.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile enables x509 client-certificate authentication (authentication.x509.clientCAFile).
	ClientCAFile string
	// Webhook turns on the secure port, with TokenReview authentication and SubjectAccessReview
	// authorization against AuthClient and anonymous requests refused, the way kubeadm and
	// minikube configure their kubelets.
	Webhook bool
	// AuthClient answers TokenReviews and SubjectAccessReviews. Defaults to KubeClient.
	AuthClient clientset.Interface

	// KubeClient and HeartbeatClient connect the kubelet to an apiserver (node registration,
	// mirror pods, leases). Nil runs the kubelet in standalone mode.
	KubeClient, HeartbeatClient *clientset.Clientset

	// FileCheckFrequency is how often the static pod directory is re-listed on top of
	// inotify (fileCheckFrequency). Default 20s, as in the kubelet.
	FileCheckFrequency time.Duration
	// Configure, when set, may change flags and configuration last, before the kubelet starts.
	Configure func(*options.KubeletFlags, *kubeletconfig.KubeletConfiguration)
	// Dependencies, when set, may change the kubelet's dependencies last, before the kubelet
	// starts: wrap the CRI runtime service, give it a TracerProvider, ... (chapter 07 watches
	// the sync loop this way).
	Dependencies func(*kubelet.Dependencies)
}

// Kubelet is a running real kubelet.
type Kubelet struct {
	// NodeName is the name the kubelet runs under.
	NodeName string
	// ReadOnlyURL is http://address:port of the read-only server, empty when disabled.
	ReadOnlyURL string
	// SecureURL is https://address:port of the authenticated server, empty when disabled.
	SecureURL string
	// RootDir is the kubelet's --root-dir, a temporary directory removed by Stop.
	RootDir string
	// ServingCertFile is the certificate the HTTPS server presents, empty when it is disabled.
	ServingCertFile string
	// Config is the configuration the kubelet was started with.
	Config *kubeletconfig.KubeletConfiguration

	cancel  context.CancelFunc
	runtime *fakeremote.RemoteRuntime
	once    sync.Once
}

// Start builds and starts a real kubelet and returns once its servers accept connections.
// The kubelet runs until Stop is called or ctx is cancelled.
func Start(parent context.Context, opts Options) (_ *Kubelet, err error) {
	defer func() { // whichever step Ctrl-C cut short
		if err != nil && parent.Err() != nil {
			err = fmt.Errorf("%w%.0w", ErrInterrupted, parent.Err())
		}
	}()
	ctx := parent
	logger := klog.FromContext(ctx)
	opts = opts.withDefaults()
	readOnlyPort, err := choosePort(opts.Address, "read-only port", opts.ReadOnlyPort)
	if err != nil {
		return nil, err
	}
	securePort, err := chooseSecurePort(opts)
	if err != nil {
		return nil, err
	}

	// The hollow node's configuration: a temporary root directory, a fast sync period, no cgroups.
	rootDir, err := hollowRootDir(logger)
	if err != nil {
		return nil, err
	}
	made.Lock()
	made.dirs = append(made.dirs, rootDir)
	made.Unlock()
	k := &Kubelet{NodeName: opts.NodeName, RootDir: rootDir}
	ctx, k.cancel = context.WithCancel(ctx)
	started := false
	defer func() {
		if !started {
			k.Stop()
		}
	}()
	flags, config, err := hollowConfig(opts.NodeName, rootDir, securePort, readOnlyPort)
	if err != nil {
		return nil, err
	}
	k.Config = config
	if err := configure(opts, flags, config, securePort); err != nil {
		return nil, err
	}
	deps, err := k.dependencies(ctx, opts, flags, config)
	if err != nil {
		return nil, err
	}

	// The kubelet binary turns contextual logging on, as the ContextualLogging feature gate is by
	// default (cmd/kubelet/app/server.go#L249-L251 (logsapi.ValidateAndApplyAsField)), after
	// logs.InitLogs turned it off; component-base's cli.Run, which runs the chapters, only turns
	// it off. Without it the kubelet would log through klog's global logger, not the one below.
	klog.EnableContextualLogging(true)
	ctx = klog.NewContext(ctx, watchExit(logger, lastWords))
	startMu.Lock()
	defer startMu.Unlock()
	unregisterKubeletCollectors()
	logger.V(1).Info("Starting the real kubelet", "node", opts.NodeName, "rootDir", flags.RootDirectory,
		"readOnlyPort", readOnlyPort, "securePort", securePort, "staticPodPath", opts.StaticPodPath)
	// run() registers the configuration for GET /configz before RunKubelet (initConfigz);
	// RunKubelet does not, so this does it. The registry is process-wide: the last kubelet
	// started is the one /configz shows.
	if err := registerConfigz(config); err != nil {
		return nil, err
	}
	if err := app.RunKubelet(ctx, &options.KubeletServer{KubeletFlags: *flags, KubeletConfiguration: *config}, deps); err != nil {
		return nil, fmt.Errorf("app.RunKubelet: %w", err)
	}

	if readOnlyPort > 0 {
		k.ReadOnlyURL = "http://" + net.JoinHostPort(opts.Address, strconv.Itoa(readOnlyPort))
	}
	if securePort > 0 {
		k.SecureURL = "https://" + net.JoinHostPort(opts.Address, strconv.Itoa(securePort))
	}
	if err := waitMetricsRegistered(ctx, flags.RootDirectory); err != nil {
		return nil, err
	}
	for port, useTLS := range map[int]bool{readOnlyPort: false, securePort: true} {
		if port > 0 {
			if err := waitListening(ctx, net.JoinHostPort(opts.Address, strconv.Itoa(port)), useTLS); err != nil {
				return nil, err
			}
		}
	}
	started = true
	return k, nil
}

// withDefaults fills in what the zero Options leave to the defaults.
func (opts Options) withDefaults() Options {
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	if opts.Address == "" {
		opts.Address = "127.0.0.1"
	}
	if opts.FileCheckFrequency == 0 {
		opts.FileCheckFrequency = 20 * time.Second
	}
	return opts
}

// configure changes the hollow node's configuration into the one Options ask for.
func configure(opts Options, flags *options.KubeletFlags, config *kubeletconfig.KubeletConfiguration, securePort int) error {
	flags.CertDirectory = filepath.Join(flags.RootDirectory, "pki")
	// RunKubelet sets this process's open-file limit to maxOpenFiles, soft and hard: the default,
	// 1,000,000, would change every other server's limit in the process as root, and be refused
	// with an error in the kubelet's log as a normal user. Keep the limit the process has.
	config.MaxOpenFiles = openFileLimit()
	flags.NodeIP = opts.NodeIP
	config.Address = opts.Address
	config.EnableServer = securePort > 0
	config.StaticPodPath = opts.StaticPodPath
	config.FileCheckFrequency.Duration = opts.FileCheckFrequency
	config.TLSCertFile, config.TLSPrivateKeyFile = opts.TLSCertFile, opts.TLSKeyFile
	config.Authentication.X509.ClientCAFile = opts.ClientCAFile
	config.Authentication.Anonymous.Enabled = false
	config.Authentication.Webhook.Enabled = opts.Webhook
	config.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeAlwaysAllow
	// makeIPTablesUtilChains (default true) has the kubelet's Run add KUBE-IPTABLES-HINT,
	// KUBE-FIREWALL with jumps from INPUT and OUTPUT, and KUBE-KUBELET-CANARY to the netfilter of
	// the network namespace it runs in, and watch them for good (initNetworkUtil,
	// pkg/kubelet/kubelet_network_linux.go): as root in the host's namespace that is the reader's
	// firewall, changed for good. These kubelets run no pod networking that would need them.
	config.MakeIPTablesUtilChains = false
	if opts.Webhook {
		config.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeWebhook
	}
	if opts.Configure != nil {
		opts.Configure(flags, config)
	}
	return checkSecureServer(config)
}

// dependencies are the hollow node's, with a fake CRI runtime behind a real gRPC socket, and the
// serving certificate and authentication/authorization the kubelet binary builds.
func (k *Kubelet) dependencies(ctx context.Context, opts Options, flags *options.KubeletFlags, config *kubeletconfig.KubeletConfiguration) (*kubelet.Dependencies, error) {
	// A fake CRI runtime behind a real gRPC socket: the kubelet talks to it as to containerd.
	endpoint := config.ContainerRuntimeEndpoint
	k.runtime = fakeremote.NewFakeRemoteRuntime()
	if err := k.runtime.Start(endpoint); err != nil {
		return nil, fmt.Errorf("start fake CRI runtime: %w", err)
	}
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).WithConnectionTimeout(15 * time.Second).Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to fake CRI runtime: %w", err)
	}

	deps := hollowDependencies(opts.NodeName, opts.KubeClient, opts.HeartbeatClient, runtimeService, k.runtime.ImageService)

	// The serving certificate and authentication/authorization, as run builds them. No secure
	// port, no serving key on disk.
	if config.EnableServer {
		deps.TLSOptions, err = app.InitializeTLS(ctx, flags, config)
		if err != nil {
			return nil, fmt.Errorf("initialize TLS: %w", err)
		}
		k.ServingCertFile = config.TLSCertFile
	}
	authClient := opts.AuthClient
	if authClient == nil && opts.KubeClient != nil {
		authClient = opts.KubeClient
	}
	auth, runCAReload, err := app.BuildAuth(types.NodeName(opts.NodeName), authClient, *config)
	if err != nil {
		return nil, fmt.Errorf("build kubelet authentication/authorization: %w", err)
	}
	deps.Auth = auth
	runCAReload(ctx.Done())
	if opts.Dependencies != nil {
		opts.Dependencies(deps)
	}
	return deps, nil
}

// FakeRuntime is the fake CRI runtime the kubelet talks to over its gRPC socket: the server
// side, whose containers a chapter may change as a container would change on its own (chapter
// 10's exit a second after they start). The kubelet sees such a change through the CRI, at its
// next relist.
func (k *Kubelet) FakeRuntime() *fakeremote.RemoteRuntime { return k.runtime }

// ErrInterrupted is Start's error when its context ended (Ctrl-C) before the kubelet served.
var ErrInterrupted = errors.New("interrupted before the kubelet was serving")

// Stop cancels the kubelet's context, stops the fake runtime and removes the kubelet's root
// directory. It is safe to call more than once.
func (k *Kubelet) Stop() {
	k.once.Do(func() {
		k.cancel()
		if k.runtime != nil {
			k.runtime.Stop()
		}
		if k.RootDir != "" {
			stopped.Lock()
			stopped.dirs = append(stopped.dirs, k.RootDir)
			stopped.Unlock()
			removeAll(k.RootDir)
		}
	})
}

// stopped are the root directories of the kubelets this process has stopped.
var stopped struct {
	sync.Mutex
	dirs []string
}

// RemoveRootDirs removes once more the root directory of every kubelet this process has
// stopped: their goroutines, still running, may have made directories there again since Stop
// removed it (a pod worker's sync makes its pod's). A process that goes on after Stop calls it
// last, just before it exits: a test package's TestMain after m.Run.
func RemoveRootDirs() {
	stopped.Lock()
	defer stopped.Unlock()
	for _, dir := range stopped.dirs {
		removeAll(dir)
	}
}

// removeAll removes dir, trying again a few times if a pod worker was making a directory in it
// at that moment (the removal then fails with "directory not empty").
func removeAll(dir string) {
	for range 5 {
		if os.RemoveAll(dir) == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Get sends GET path to the read-only server and returns the response body.
func (k *Kubelet) Get(ctx context.Context, path string) ([]byte, error) {
	if k.ReadOnlyURL == "" {
		return nil, errors.New("the read-only server is disabled")
	}
	return get(ctx, http.DefaultClient, k.ReadOnlyURL+path)
}

// Version is the k8s.io/kubernetes module version this program was built with.
func Version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				return dep.Version
			}
		}
	}
	return "(unknown)"
}

// openFileLimit is the process's hard open-file limit, which RunKubelet then leaves as it is.
func openFileLimit() int64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Max > 1<<20 {
		return 1 << 20
	}
	return int64(rl.Max)
}

// registerConfigz publishes config as "kubeletconfig" on /configz, as run()'s initConfigz does
// (cmd/kubelet/app/server.go#L603-L615 (func initConfigz)).
func registerConfigz(config *kubeletconfig.KubeletConfiguration) error {
	versioned := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := kubeletconfigconversion.Convert_config_KubeletConfiguration_To_v1beta1_KubeletConfiguration(config, versioned, nil); err != nil {
		return err
	}
	versioned.SetGroupVersionKind(kubeletconfigv1beta1.SchemeGroupVersion.WithKind("KubeletConfiguration"))
	configz.Delete("kubeletconfig")
	cz, err := configz.New("kubeletconfig")
	if err != nil {
		return fmt.Errorf("configz: %w", err)
	}
	cz.Set(versioned)
	return nil
}
