// Package toykubelet is a kubelet small enough to read in one sitting, that plugs into the same
// interface as the real one: it satisfies k8s.io/kubernetes/pkg/kubelet.Bootstrap, the
// interface startKubelet starts (pkg/kubelet/kubelet.go#L297-L306 (type Bootstrap interface)).
//
// Every method does what the real one does, at toy scale:
//
//   - GetConfiguration returns the configuration it was given;
//   - BirthCry records the "Starting kubelet." event;
//   - StartGarbageCollection forgets pods that have been gone longer than a grace period;
//   - Run is the sync loop: it applies ADD, UPDATE, REMOVE, DELETE and RECONCILE to its pod
//     manager and starts pods — Pending, then Running, with a status for every container;
//   - ListenAndServeReadOnly serves /pods and /healthz, and 405 for the debug endpoints;
//   - ListenAndServe serves the same over TLS, behind the authentication and authorization it is
//     given (the real filter's 401/403 answers);
//   - ListenAndServePodResources serves the podresources gRPC API on a unix socket;
//   - ListenAndServePods serves the Pods gRPC API when the PodsAPI feature gate is on (beta and
//     on by default in v1.37).
//
// Where it differs from the real kubelet on purpose: there are no containers, only statuses;
// the servers stop when the context ends (the real ones stay until the process exits); a port
// that cannot be opened is logged, not os.Exit(1).
package toykubelet

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/events"
	"k8s.io/utils/clock"
)

// The toy is a kubelet.Bootstrap: the compiler checks it against the real interface.
var _ kubelet.Bootstrap = (*Kubelet)(nil)

// Options configure a toy kubelet. Only NodeName and RootDir are required.
type Options struct {
	NodeName types.NodeName
	// RootDir holds the gRPC sockets, as the kubelet's --root-dir does.
	RootDir string
	// Config is returned by GetConfiguration; ports and addresses are read from it by whoever
	// starts the servers, as startKubelet does.
	Config kubeletconfig.KubeletConfiguration
	// Recorder receives the kubelet's events. Default: events are logged.
	Recorder record.EventRecorder
	// GCPeriod is how often garbage collection runs (the kubelet's is one minute), and
	// GCGracePeriod how long a removed pod is remembered (minimum-container-ttl-duration).
	GCPeriod, GCGracePeriod time.Duration
	// Clock is the time source; tests use a fake one.
	Clock clock.Clock
}

// Kubelet is the toy kubelet.
type Kubelet struct {
	opts     Options
	recorder record.EventRecorder
	clock    clock.Clock
	pods     *podManager
}

// New makes a toy kubelet.
func New(opts Options) *Kubelet {
	if opts.GCPeriod == 0 {
		opts.GCPeriod = time.Minute
	}
	if opts.GCGracePeriod == 0 {
		opts.GCGracePeriod = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	recorder := opts.Recorder
	if recorder == nil {
		broadcaster := record.NewBroadcaster()
		broadcaster.StartStructuredLogging(3)
		recorder = broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "toy-kubelet", Host: string(opts.NodeName)})
	}
	return &Kubelet{opts: opts, recorder: recorder, clock: opts.Clock, pods: newPodManager()}
}

// GetConfiguration returns the configuration the kubelet was made with.
func (k *Kubelet) GetConfiguration() kubeletconfig.KubeletConfiguration { return k.opts.Config }

// nodeRef is the object the kubelet's own events are about (pkg/kubelet/kubelet.go, nodeRefWithUID).
func (k *Kubelet) nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: string(k.opts.NodeName), UID: types.UID(k.opts.NodeName)}
}

// BirthCry records that the kubelet started (pkg/kubelet/kubelet.go#L3373-L3376 (func (kl *Kubelet) BirthCry())).
func (k *Kubelet) BirthCry() {
	k.recorder.Eventf(k.nodeRef(), v1.EventTypeNormal, events.StartingKubelet, "Starting kubelet.")
}

// StartGarbageCollection starts the loop that forgets pods which have been gone longer than the
// grace period — the toy's counterpart of container garbage collection
// (pkg/kubelet/kubelet.go#L1723-L1735 (kl.containerGC.GarbageCollect(ctx))). It returns at once.
func (k *Kubelet) StartGarbageCollection(ctx context.Context) {
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if forgotten := k.pods.forgetRemoved(k.clock.Now().Add(-k.opts.GCGracePeriod)); len(forgotten) > 0 {
			klog.FromContext(ctx).V(4).Info("Garbage collection forgot removed pods", "pods", forgotten)
		}
	}, k.opts.GCPeriod)
}

// Pods returns the pods the kubelet runs, sorted by namespace and name: what /pods serves.
func (k *Kubelet) Pods() []*v1.Pod { return k.pods.list() }

// Removed returns the UIDs of removed pods the kubelet still remembers.
func (k *Kubelet) Removed() []types.UID { return k.pods.removedUIDs() }
