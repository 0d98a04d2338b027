package main

import (
	"fmt"
	"go/version"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// stagingVersion is the version of the staging modules (k8s.io/api, k8s.io/client-go, …) that
// ships with a kubernetes release: v1.38.0-beta.0's is v0.38.0-beta.0.
func stagingVersion(kubernetes string) string {
	return "v0" + strings.TrimPrefix(kubernetes, "v1")
}

// stagingModules are the modules kubernetes' go.mod replaces with a directory of its staging/ tree.
func stagingModules(kubernetes *modfile.File) []string {
	var out []string
	for _, r := range kubernetes.Replace {
		if strings.HasPrefix(r.New.Path, "./staging/") {
			out = append(out, r.Old.Path)
		}
	}
	sort.Strings(out)
	return out
}

// retarget rewrites this repository's go.mod for kubernetes next, whose own go.mod is nextMod:
// k8s.io/kubernetes required at next, and one replace line per staging module of next at its
// staging version, as go.mod pins them for the current release (TestStagingReplaces). The
// replace lines of staging modules next no longer has go, and a require of a staging module at
// the current staging version moves too. It returns the new go.mod and what changed, a line each.
func retarget(goMod []byte, nextMod *modfile.File, next string) ([]byte, []string, error) {
	f, err := modfile.Parse("go.mod", goMod, nil)
	if err != nil {
		return nil, nil, err
	}
	var current string
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			current = r.Mod.Version
		}
	}
	if current == "" {
		return nil, nil, fmt.Errorf("go.mod does not require k8s.io/kubernetes")
	}
	from, to := stagingVersion(current), stagingVersion(next)
	var changes []string
	if err := f.AddRequire("k8s.io/kubernetes", next); err != nil {
		return nil, nil, err
	}
	changes = append(changes, fmt.Sprintf("k8s.io/kubernetes %s → %s", current, next))

	staging := map[string]bool{}
	for _, m := range stagingModules(nextMod) {
		staging[m] = true
	}
	replaced := map[string]bool{}
	for _, r := range f.Replace {
		if r.Old.Path != r.New.Path || r.New.Version != from {
			continue // not a staging pin: someone else's replace stays as it is
		}
		path := r.Old.Path // DropReplace clears r
		replaced[path] = true
		if !staging[path] {
			if err := f.DropReplace(path, r.Old.Version); err != nil {
				return nil, nil, err
			}
			changes = append(changes, fmt.Sprintf("%s: no longer a staging module of %s, its replace line dropped", path, next))
		}
	}
	for _, m := range stagingModules(nextMod) {
		if err := f.AddReplace(m, "", m, to); err != nil {
			return nil, nil, err
		}
		if !replaced[m] {
			changes = append(changes, fmt.Sprintf("%s: a new staging module of %s, replaced by %s@%s", m, next, m, to))
		}
	}
	for _, r := range f.Require {
		if staging[r.Mod.Path] && r.Mod.Version == from {
			if err := f.AddRequire(r.Mod.Path, to); err != nil {
				return nil, nil, err
			}
		}
	}
	changes = append(changes, fmt.Sprintf("every staging module's replace line: %s → %s", from, to))
	f.Cleanup()
	out, err := f.Format()
	return out, changes, err
}

// toolchain is the Go release kubernetes is built with: its .go-version file (goVersionFile, the
// version the release's own builds use), or else the go line of its go.mod; "local" when this
// machine's Go (local, as runtime.Version says it) is that new already.
func toolchain(kubernetes *modfile.File, goVersionFile, local string) string {
	want := ""
	if v := strings.TrimSpace(goVersionFile); v != "" {
		want = "go" + v
	} else if kubernetes.Go != nil {
		want = "go" + kubernetes.Go.Version
	}
	if want == "" || !version.IsValid(want) || version.Compare(local, want) >= 0 {
		return "local"
	}
	return want
}
