//go:build !unix

package kubeletclient

import (
	"fmt"
	"runtime"
)

// CheckPodsAPISocket refuses every socket here: the Pods API is a unix socket in a Linux
// kubelet's root directory, and this system has no owners and modes to vouch for one with.
func CheckPodsAPISocket(path string) error {
	_, err := trustedSocket(path)
	return err
}

func trustedSocket(path string) (string, error) {
	return "", &PodsAPIError{Socket: path, Refused: true, Reason: fmt.Sprintf("this client cannot check a socket's owner on %s", runtime.GOOS),
		Fix: "The Pods API is read on the node (Linux) or in a pod on it: from here, ask the kubelet over HTTPS or through the apiserver"}
}
