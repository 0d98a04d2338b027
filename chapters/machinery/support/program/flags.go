package program

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The checks below are what a command's Validate runs on its flags before any work starts:
// each error is one line that names the flag and the value, as the reader typed them.

// NodeName checks a node name as the apiserver does (a DNS-1123 subdomain, lower case): the
// kubelet names its static pods <name>-<node>, and a name the apiserver refuses would fail only
// minutes later, as pods that never appear. The kubelet also puts it, as its hostname
// (--hostname-override), in the Node's kubernetes.io/hostname label
// (pkg/kubelet/kubelet_node_status.go#L309 (v1.LabelHostname: kl.hostname)), whose value is at
// most 63 characters: a longer name is a Node the apiserver refuses, and a node that never
// registers.
func NodeName(flag, name string) error {
	if name == "" {
		return fmt.Errorf("%s %q: must not be empty", flag, name)
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%s %q: %s", flag, name, strings.Join(msgs, "; "))
	}
	if len(name) > validation.LabelValueMaxLength {
		return fmt.Errorf("%s %q: %d characters; at most %d, since the kubelet puts the name in the Node's kubernetes.io/hostname label, and the apiserver refuses a longer label value", flag, name, len(name), validation.LabelValueMaxLength)
	}
	return nil
}

// Positive checks a duration that must be more than zero (a period, a timeout).
func Positive(flag string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s %s: must be more than 0", flag, d)
	}
	return nil
}

// Port checks a TCP port on 127.0.0.1: 0 (pick a free one) or a port from 1 to 65535 that
// nothing listens on yet, found by binding it and letting it go.
func Port(flag string, port int) error {
	if port == 0 {
		return nil
	}
	if port < 0 || port > 65535 {
		return fmt.Errorf("%s %d: a port is 0 (pick a free one) or 1 to 65535", flag, port)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%s %d: %w", flag, port, err)
	}
	return l.Close()
}

// Absent checks, before any work starts, that a flag names a file the command can make: one that
// does not exist yet (a file the reader names is never overwritten), in a directory that does.
func Absent(flag, path string) error {
	if path == "" {
		return fmt.Errorf("%s %q: name a file", flag, path)
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s %s: the file exists; name a new one (it is never overwritten): %w", flag, path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: its directory: %w", flag, path, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
	}
	return nil
}

// NewFile creates the file a flag names for the command's output, before any work starts, so
// that a long run cannot fail only at its end when it cannot write there. It never overwrites:
// a file that exists is refused. Remove the file on the error path; on success it is the
// reader's.
func NewFile(flag, path string) (*os.File, error) {
	if err := Absent(flag, path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s %s: the file exists; name a new one (it is never overwritten): %w", flag, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return f, nil
}

// Directory checks that a flag names a directory the command can read, and returns its absolute
// path (the kubelet resolves nothing against its working directory).
func Directory(flag, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%s %q: name a directory", flag, path)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s %s: not a directory", flag, path)
	}
	if _, err := os.ReadDir(path); err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return abs, nil
}

// KubeletFlags are the flags of a chapter that runs kubelets on a directory of static pods,
// in this process, and prints their pods: chapter 04 runs one, chapter 05 two.
type KubeletFlags struct {
	StaticPodPath string // --static-pod-path: checked, and made absolute, by Directory
	NodeName      string // --node-name
	ReadOnlyPort  int    // --read-only-port: 0 picks a free one
	KubeletLog    string // --kubelet-log: "" for a temporary file, "-" for stderr
	Wait          time.Duration
	Once          bool // --once: print and stop instead of serving until Ctrl-C
}

// Validate checks the flags before any kubelet starts: a name the apiserver would refuse, a port
// out of range or taken, a wait (--wait) of 0 or a log file that exists would otherwise fail
// later, or never say why.
func (f *KubeletFlags) Validate() error {
	if err := NodeName("--node-name", f.NodeName); err != nil {
		return err
	}
	if err := Port("--read-only-port", f.ReadOnlyPort); err != nil {
		return err
	}
	if err := Positive("--wait", f.Wait); err != nil {
		return err
	}
	if f.KubeletLog != "" && f.KubeletLog != "-" {
		return Absent("--kubelet-log", f.KubeletLog)
	}
	return nil
}
