package pressure

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
)

// noNetns says why the tests that start a mini-cluster cannot run; nodeIP is its node's address.
var (
	noNetns error
	nodeIP  string
)

// TestMain runs the package's tests inside a private network namespace when one can be made
// (the benchmark's mini-cluster needs a node address), with the kubelets' log in a temporary
// file, and removes last what stopped kubelets made again.
func TestMain(m *testing.M) {
	if ran, code, err := netns.RunInside(); ran {
		os.Exit(code)
	} else if err != nil {
		noNetns = fmt.Errorf("no private network namespace could be made (%w); the mini-cluster never uses this machine's own address", err)
	}
	nodeIP, _ = netns.Inside()
	_, closeLog, err := kubeletlog.ToFile("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	closeLog()
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}
