// Package kubeconfig merges a cluster's kubeconfig into one the reader names, as minikube and
// `kubectl config` do, and takes it out again when the cluster stops (chapter 08's --kubeconfig).
// Its errors name the flag, --kubeconfig, and the file.
package kubeconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// Names are the names of a cluster's entries in its kubeconfig.
type Names struct{ Cluster, Context, User string }

// Check checks, before anything starts, that a cluster's entries, named names, can be merged into
// the kubeconfig at path: a new file in a directory that exists and this user may write, or a
// kubeconfig this user may write that names no cluster, context or user as the cluster's do
// (merged in, they would replace the reader's, and taking them out on exit would lose them), and
// that no other user can read (the cluster's admin key goes into it).
func Check(path string, names Names) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := program.Absent("--kubeconfig", path); err != nil {
			return err
		}
		if err := unix.Access(filepath.Dir(path), unix.W_OK); err != nil {
			return fmt.Errorf("--kubeconfig %s: its directory is not yours to write (%w), and the cluster's context would go into a new file there", path, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	// Opened for writing and closed, nothing written: the merge writes it once the cluster runs.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if pathErr := (*fs.PathError)(nil); errors.As(err, &pathErr) {
		return fmt.Errorf("--kubeconfig %s: not yours to write (%w), and the cluster's context would be merged into it", path, pathErr.Err)
	}
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	existing, err := load(data)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if err := private(path); err != nil {
		return err
	}
	ours := clientcmdapi.NewConfig()
	ours.Clusters[names.Cluster] = nil
	ours.Contexts[names.Context] = nil
	ours.AuthInfos[names.User] = nil
	return conflicts(path, existing, ours)
}

// private refuses a kubeconfig that other users can read: the cluster's admin key
// goes into it, and would be theirs too for as long as the cluster runs.
func private(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if perm := info.Mode().Perm(); perm&0o044 != 0 {
		return fmt.Errorf("--kubeconfig %s is readable by other users (mode %04o); the cluster's admin key would be too: chmod 600 %s", path, perm, path)
	}
	return nil
}

// load reads a kubeconfig: an empty file, or one of kind Config. clientcmd.Load takes
// any YAML mapping for an empty kubeconfig, and merging into it would rewrite a file of notes.
func load(data []byte) (*clientcmdapi.Config, error) {
	if len(bytes.TrimSpace(data)) > 0 {
		var typeMeta metav1.TypeMeta
		if err := yaml.Unmarshal(data, &typeMeta); err != nil || typeMeta.Kind != "Config" {
			return nil, errors.New("not a kubeconfig (no kind: Config), so nothing is merged into it")
		}
	}
	config, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("not a kubeconfig, so nothing is merged into it: %w", err)
	}
	return config, nil
}

// conflicts says which of ours' names existing has already.
func conflicts(path string, existing, ours *clientcmdapi.Config) error {
	for _, kind := range []struct {
		what          string
		existing, our []string
	}{
		{"cluster", slices.Collect(maps.Keys(existing.Clusters)), slices.Collect(maps.Keys(ours.Clusters))},
		{"context", slices.Collect(maps.Keys(existing.Contexts)), slices.Collect(maps.Keys(ours.Contexts))},
		{"user", slices.Collect(maps.Keys(existing.AuthInfos)), slices.Collect(maps.Keys(ours.AuthInfos))},
	} {
		for _, name := range kind.our {
			if slices.Contains(kind.existing, name) {
				return fmt.Errorf("--kubeconfig %s: it has a %s %q already (another mini-cluster's?), which this one would replace: "+
					"name another file, or delete it (kubectl config delete-%s %s)", path, kind.what, name, kind.what, name)
			}
		}
	}
	return nil
}

// Merge merges the kubeconfig at generated into the one at path, as minikube and
// `kubectl config` do: the clusters, users and contexts added, the current context set to the
// cluster's. The returned function takes out what was added, and only that: the entries if they
// are still the cluster's, the current context if it is still the cluster's; a file it created,
// it removes; a file that is then as it was, it writes back byte for byte.
func Merge(generated, path string) (unmerge func() error, err error) {
	ours, err := clientcmd.LoadFromFile(generated)
	if err != nil {
		return nil, err
	}
	original, err := os.ReadFile(path)
	created := errors.Is(err, fs.ErrNotExist)
	if err != nil && !created {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	merged, err := load(original)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if err := conflicts(path, merged, ours); err != nil {
		return nil, err
	}
	// The admin key goes in: a new file is the reader's alone (made here, never one another user
	// made meanwhile), an existing one must be already.
	if created {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			_ = os.Remove(path)
			return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
		}
	} else if err := private(path); err != nil {
		return nil, err
	}
	before := merged.DeepCopy()
	maps.Copy(merged.Clusters, ours.Clusters)
	maps.Copy(merged.AuthInfos, ours.AuthInfos)
	maps.Copy(merged.Contexts, ours.Contexts)
	merged.CurrentContext = ours.CurrentContext
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		if created {
			_ = os.Remove(path)
		}
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	takeOut := func() error {
		now, err := clientcmd.LoadFromFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the reader removed it
		}
		if err != nil {
			return err
		}
		for name, c := range ours.Clusters {
			if n, ok := now.Clusters[name]; ok && n.Server == c.Server && bytes.Equal(n.CertificateAuthorityData, c.CertificateAuthorityData) {
				delete(now.Clusters, name)
			}
		}
		for name, a := range ours.AuthInfos {
			if n, ok := now.AuthInfos[name]; ok && bytes.Equal(n.ClientCertificateData, a.ClientCertificateData) {
				delete(now.AuthInfos, name)
			}
		}
		for name, c := range ours.Contexts {
			if n, ok := now.Contexts[name]; ok && n.Cluster == c.Cluster && n.AuthInfo == c.AuthInfo {
				delete(now.Contexts, name)
			}
		}
		if now.CurrentContext == ours.CurrentContext {
			now.CurrentContext = before.CurrentContext
		}
		switch {
		case created && len(now.Clusters)+len(now.AuthInfos)+len(now.Contexts) == 0 && now.CurrentContext == "":
			return os.Remove(path)
		case !created && sameConfig(now, before):
			return os.WriteFile(path, original, 0o600)
		}
		return clientcmd.WriteToFile(*now, path)
	}
	// Should a kubelet end the process (os.Exit(1)), the cluster's credentials come out first.
	unregister := kubeletlog.AtExit(func() { _ = takeOut() })
	return func() error {
		unregister()
		return takeOut()
	}, nil
}

// sameConfig compares two kubeconfigs as written, without where each entry was read from.
func sameConfig(a, b *clientcmdapi.Config) bool {
	x, errA := clientcmd.Write(*a)
	y, errB := clientcmd.Write(*b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}
