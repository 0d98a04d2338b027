package staticpods

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Rejected is a manifest the source skipped, and why.
type Rejected struct {
	File   string
	Reason error
}

func (r Rejected) String() string { return fmt.Sprintf("%s: %v", r.File, r.Reason) }

// Listing is what one reading of the static pod path found.
type Listing struct {
	// Pods are the valid manifests' pods, in file name order, one per namespace/name.
	Pods []*v1.Pod
	// Rejected are the files that gave no pod. Entries the kubelet skips without a word
	// (hidden files) are not listed; directories are, since a reader may expect recursion.
	Rejected []Rejected
	// SingleFile is true when the path is one manifest rather than a directory.
	SingleFile bool
}

// List reads the static pod path once, as the kubelet's file source does
// (pkg/kubelet/config/file.go#L120-L155 (func (s *sourceFile) listConfig)):
//
//   - a directory: every entry whose name does not start with "." — the kubelet globs "[^.]*" —
//     in name order (pkg/kubelet/config/file.go#L160-L196 (func (s *sourceFile) extractFromDir));
//     symlinks are followed; sub-directories are skipped, not walked; a bad file is skipped and
//     the others still count;
//   - a regular file: that one manifest.
//
// Two files may declare the same namespace/name: the kubelet keeps its pods in a store keyed by
// namespace/name, filled in file name order, so the later file wins. List does the same and
// reports the earlier file as rejected.
//
// Unlike the kubelet, which treats an unreadable directory as an empty one, List returns the
// error: a reader asking "what would my kubelet load?" wants to know.
func List(path string, nodeName types.NodeName) (Listing, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Listing{}, err
	}
	switch {
	case info.Mode().IsRegular():
		pod, err := ReadManifest(path, nodeName)
		if err != nil {
			return Listing{SingleFile: true, Rejected: []Rejected{{path, err}}}, nil
		}
		return Listing{SingleFile: true, Pods: []*v1.Pod{pod}}, nil
	case !info.IsDir():
		return Listing{}, fmt.Errorf("%s is neither a directory nor a file", path)
	}

	entries, err := os.ReadDir(path)
	if err != nil {
		return Listing{}, err
	}
	var l Listing
	byName := map[string]int{} // namespace/name → index in l.Pods
	var files []string         // files[i] declared l.Pods[i]
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		file := filepath.Join(path, name)
		info, err := os.Stat(file) // follows symlinks, as the kubelet's does
		switch {
		case err != nil:
			l.Rejected = append(l.Rejected, Rejected{file, err})
			continue
		case info.IsDir():
			l.Rejected = append(l.Rejected, Rejected{file, fmt.Errorf("a directory: the kubelet does not look into sub-directories")})
			continue
		case !info.Mode().IsRegular():
			l.Rejected = append(l.Rejected, Rejected{file, fmt.Errorf("not a regular file (%s)", info.Mode().Type())})
			continue
		}
		pod, err := ReadManifest(file, nodeName)
		if err != nil {
			l.Rejected = append(l.Rejected, Rejected{file, err})
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		if i, seen := byName[key]; seen {
			l.Rejected = append(l.Rejected, Rejected{files[i], fmt.Errorf("pod %s is declared again by %s, which wins (later file name)", key, name)})
			l.Pods[i], files[i] = pod, file
			continue
		}
		byName[key] = len(l.Pods)
		l.Pods = append(l.Pods, pod)
		files = append(files, file)
	}
	return l, nil
}
