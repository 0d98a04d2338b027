package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReaderView(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"the lab's settings, root and offline lines go", `* minikube v1.38.1 on Debian 12.11 (docker/amd64)
  - MINIKUBE_BASE_IMAGE=kubelet-walkthrough/kicbase:v0.0.50-lab
  - KUBECONFIG=/tmp/kubelet-walkthrough-lab-1/kubeconfig
! minikube skips various validations when --force is supplied; this may lead to unexpected behavior
! Specified Kubernetes version 1.37.2 is newer than the newest supported version: v1.35.1. Use ` + "`minikube config defaults kubernetes-version`" + ` for details.
* Using the docker driver based on user configuration
* The "docker" driver should not be used with root privileges. If you wish to continue as root, use --force.
* If you are running minikube within a VM, consider using --driver=none:
*   https://minikube.sigs.k8s.io/docs/reference/drivers/none/
* Tip: To remove this root owned cluster, run: sudo minikube delete
* Using Docker driver with root privileges
! Failing to connect to https://registry.k8s.io/ from both inside the minikube container and host machine
* To pull new external images, you may need to configure a proxy: https://minikube.sigs.k8s.io/docs/reference/networking/proxy/
* Done! kubectl is now configured to use "minikube" cluster and "default" namespace by default
`, `* minikube v1.38.1 on Debian 12.11 (docker/amd64)
! minikube skips various validations when --force is supplied; this may lead to unexpected behavior
! Specified Kubernetes version 1.37.2 is newer than the newest supported version: v1.35.1. Use ` + "`minikube config defaults kubernetes-version`" + ` for details.
* Using the docker driver based on user configuration
* Using Docker driver with root privileges
* Done! kubectl is now configured to use "minikube" cluster and "default" namespace by default
`},
		{"what readers see too stays, however like a lab line it looks", `  - MINIKUBE_HOME is where minikube keeps its files
* Using Docker driver with root privileges? no
! Failing to connect to https://example.com/ from both inside the minikube container and host machine
`, `  - MINIKUBE_HOME is where minikube keeps its files
* Using Docker driver with root privileges? no
! Failing to connect to https://example.com/ from both inside the minikube container and host machine
`},
		{"no output", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ReaderView(tt.in))
		})
	}
}
