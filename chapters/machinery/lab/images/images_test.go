package images

import (
	"fmt"
)

func ExampleSpecs() {
	for _, spec := range Specs(Versions{Kubernetes: "v1.37.2", Etcd: "3.7.0-0", CoreDNS: "v1.14.6", Pause: "3.10.2", StorageProvisioner: "v5"}) {
		fmt.Printf("%-48s %s\n", spec.Ref, spec.Path)
	}
	// Output:
	// registry.k8s.io/kube-apiserver:v1.37.2           /usr/local/bin/kube-apiserver
	// registry.k8s.io/kube-controller-manager:v1.37.2  /usr/local/bin/kube-controller-manager
	// registry.k8s.io/kube-scheduler:v1.37.2           /usr/local/bin/kube-scheduler
	// registry.k8s.io/kube-proxy:v1.37.2               /usr/local/bin/kube-proxy
	// registry.k8s.io/coredns/coredns:v1.14.6          /coredns
	// registry.k8s.io/pause:3.10.2                     /pause
	// registry.k8s.io/etcd:3.7.0-0                     /usr/local/bin/etcd
	// gcr.io/k8s-minikube/storage-provisioner:v5       /storage-provisioner
}
