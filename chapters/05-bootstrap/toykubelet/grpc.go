package toykubelet

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig"
)

// PodResourcesSocket is where the podresources API listens, under the root directory, as the
// real kubelet's (pkg/kubelet/kubelet_getters.go#L219-L221 (func (kl *Kubelet) getPodResourcesDir() string)).
func (k *Kubelet) PodResourcesSocket() string {
	return filepath.Join(k.opts.RootDir, kubeletconfig.DefaultKubeletPodResourcesDirName, "kubelet.sock")
}

// PodsSocket is where the Pods API listens when its feature gate is on.
func (k *Kubelet) PodsSocket() string {
	return filepath.Join(k.opts.RootDir, kubeletconfig.DefaultKubeletPodsAPIDirName, "pods-api.sock")
}

// ListenAndServePodResources serves the podresources API — which containers of which pods use
// which devices, CPUs and memory — on a unix socket, until ctx ends. The toy's pods use none,
// so each lists its containers only.
func (k *Kubelet) ListenAndServePodResources(ctx context.Context) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.KubeletPodResourcesGet) {
		klog.FromContext(ctx).Info("KubeletPodResourcesGet feature gate is off: not serving the podresources API")
		return
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, &podResources{k: k})
	serveGRPC(ctx, "podresources", k.PodResourcesSocket(), srv)
}

// ListenAndServePods serves the Pods API when the PodsAPI feature gate is on, as the real
// kubelet does (pkg/kubelet/kubelet.go#L3435-L3448 (func (kl *Kubelet) ListenAndServePods)).
// The gate is beta and on by default since v1.37 (alpha, off, in v1.36).
func (k *Kubelet) ListenAndServePods(ctx context.Context) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.PodsAPI) {
		klog.FromContext(ctx).Info("PodsAPI feature gate is off: not serving the Pods API")
		return
	}
	srv := grpc.NewServer()
	podsv1alpha1.RegisterPodsServer(srv, &podsAPI{k: k})
	serveGRPC(ctx, "pods", k.PodsSocket(), srv)
}

// serveGRPC listens on a unix socket (replacing a stale one) and serves until ctx ends.
func serveGRPC(ctx context.Context, name, socket string, srv *grpc.Server) {
	logger := klog.FromContext(ctx).WithValues("api", name, "socket", socket)
	if err := os.MkdirAll(filepath.Dir(socket), 0o750); err != nil {
		logger.Error(err, "Cannot create the socket's directory")
		return
	}
	_ = os.Remove(socket)
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", socket)
	if err != nil {
		logger.Error(err, "Cannot listen")
		return
	}
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	logger.Info("Toy kubelet serving gRPC")
	if err := srv.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		logger.Error(err, "gRPC server failed")
	}
}

// podResources implements the podresources v1 API over the toy's pods.
type podResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	k *Kubelet
}

func (p *podResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for _, pod := range p.k.pods.list() {
		resp.PodResources = append(resp.PodResources, podResource(pod.Namespace, pod.Name, pod.Spec.Containers))
	}
	return resp, nil
}

func (p *podResources) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	pod, ok := p.k.pods.byName(req.PodNamespace, req.PodName)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "pod %s/%s not found", req.PodNamespace, req.PodName)
	}
	return &podresourcesv1.GetPodResourcesResponse{PodResources: podResource(pod.Namespace, pod.Name, pod.Spec.Containers)}, nil
}

// GetAllocatableResources: the toy node has no devices, and its CPUs and memory are not managed.
func (p *podResources) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	return &podresourcesv1.AllocatableResourcesResponse{}, nil
}

func podResource(namespace, name string, containers []v1.Container) *podresourcesv1.PodResources {
	pr := &podresourcesv1.PodResources{Namespace: namespace, Name: name}
	for _, c := range containers {
		pr.Containers = append(pr.Containers, &podresourcesv1.ContainerResources{Name: c.Name})
	}
	return pr
}

// podsAPI implements the Pods API (v1alpha1): pods as protobuf bytes, by list, by UID, or as a
// watch that starts with every pod, then INITIAL_SYNC_COMPLETE, then each change.
type podsAPI struct {
	podsv1alpha1.UnimplementedPodsServer
	k *Kubelet
}

func (p *podsAPI) ListPods(context.Context, *podsv1alpha1.ListPodsRequest) (*podsv1alpha1.ListPodsResponse, error) {
	resp := &podsv1alpha1.ListPodsResponse{}
	for _, pod := range p.k.pods.list() {
		data, err := pod.Marshal()
		if err != nil {
			return nil, status.Errorf(codes.Internal, "marshal pod: %v", err)
		}
		resp.Pods = append(resp.Pods, data)
	}
	return resp, nil
}

func (p *podsAPI) GetPod(_ context.Context, req *podsv1alpha1.GetPodRequest) (*podsv1alpha1.GetPodResponse, error) {
	pod, ok := p.k.pods.get(types.UID(req.PodUID))
	if !ok {
		return nil, status.Errorf(codes.NotFound, "pod %s not found", req.PodUID)
	}
	data, err := pod.Marshal()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "marshal pod: %v", err)
	}
	return &podsv1alpha1.GetPodResponse{Pod: data}, nil
}

func (p *podsAPI) WatchPods(_ *podsv1alpha1.WatchPodsRequest, stream grpc.ServerStreamingServer[podsv1alpha1.WatchPodsEvent]) error {
	events, stop := p.k.pods.watch()
	defer stop()
	for _, pod := range p.k.pods.list() {
		data, err := pod.Marshal()
		if err != nil {
			return status.Errorf(codes.Internal, "marshal pod: %v", err)
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
		case e := <-events:
			data, err := e.pod.Marshal()
			if err != nil {
				return status.Errorf(codes.Internal, "marshal pod: %v", err)
			}
			kind := podsv1alpha1.EventType_MODIFIED
			switch {
			case e.added:
				kind = podsv1alpha1.EventType_ADDED
			case e.deleted:
				kind = podsv1alpha1.EventType_DELETED
			}
			if err := stream.Send(&podsv1alpha1.WatchPodsEvent{Type: kind, Pod: data}); err != nil {
				return err
			}
		}
	}
}
