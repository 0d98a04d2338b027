package minicluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// PrivateNodeIP is the node address inside a private network namespace: not loopback, so the
// kubelet accepts it, global unicast, so the apiserver proxies to it, and on no network but the
// namespace's own `lo`.
const PrivateNodeIP = "10.200.0.1"

// privateNetworkEnv marks a process that runs inside the namespace; it holds the node IP.
const privateNetworkEnv = "WALKTHROUGH_PRIVATE_NETWORK"

// InPrivateNetwork says whether this process runs in the namespace PrivateNetworkCommand made,
// and returns the node IP to use there.
func InPrivateNetwork() (string, bool) {
	ip := os.Getenv(privateNetworkEnv)
	return ip, ip != ""
}

// PrivateNetworkCommand returns a command that runs this program again, with args, inside a new
// network namespace whose loopback interface is up and also carries PrivateNodeIP. Nothing in
// there reaches any other host, and nothing outside reaches in — only the file system is shared.
// As root it uses `unshare --net`; otherwise `unshare --map-root-user --net`, which needs
// unprivileged user namespaces.
func PrivateNetworkCommand(args ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, errors.New("no `unshare` on PATH (util-linux): cannot make a private network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("no `ip` on PATH (iproute2): cannot configure the private network namespace")
	}
	flags := []string{"--net"}
	if os.Geteuid() != 0 {
		flags = []string{"--map-root-user", "--net"}
	}
	script := fmt.Sprintf(`ip link set lo up && ip addr add %s/32 dev lo && exec "$0" "$@"`, PrivateNodeIP)
	cmd := exec.Command(unshare, append(append(flags, "--", "/bin/sh", "-c", script, self), args...)...)
	cmd.Env = append(os.Environ(), privateNetworkEnv+"="+PrivateNodeIP)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd, nil
}

// PrivateNetworkAvailable says whether a private network namespace can be made here (nil), or
// why not.
func PrivateNetworkAvailable() error {
	cmd, err := PrivateNetworkCommand()
	if err != nil {
		return err
	}
	// The same namespace and setup, running `true` instead of this program.
	cmd.Args[len(cmd.Args)-1] = "/bin/true"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// RunInPrivateNetwork runs this program again, with the same arguments, inside a private network
// namespace — unless it already runs in one. ran says the other run happened (exit with code);
// err says why no namespace could be made. Test packages call it from TestMain.
func RunInPrivateNetwork() (ran bool, code int, err error) {
	if _, inside := InPrivateNetwork(); inside {
		return false, 0, nil
	}
	cmd, err := PrivateNetworkCommand(os.Args[1:]...)
	if err != nil {
		return false, 0, err
	}
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return false, 0, err
	}
	return true, cmd.ProcessState.ExitCode(), nil
}
