package probes

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
)

// A goroutine, as this process's goroutine profile (debug=2, the form of a panic's stacks) shows
// it: its id, its functions from the top, and the go statement that started it.
type goroutine struct {
	id        string
	functions []string
	creator   string // the function whose go statement started it
	createdAt string // that statement's file:line, in Kubernetes' module
	parent    string // the goroutine that ran it
}

var (
	goroutineHead = regexp.MustCompile(`^goroutine (\d+) \[`)
	createdBy     = regexp.MustCompile(`^created by (\S+) in goroutine (\d+)$`)
	k8sFile       = regexp.MustCompile(`k8s\.io/kubernetes@[^/]+/(\S+:\d+)`)
)

// goroutines reads this process's goroutines.
func goroutines() ([]goroutine, error) {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		return nil, err
	}
	var out []goroutine
	for _, block := range strings.Split(buf.String(), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		m := goroutineHead.FindStringSubmatch(lines[0])
		if m == nil {
			continue
		}
		g := goroutine{id: m[1]}
		for i := 1; i < len(lines); i++ {
			line := strings.TrimSpace(lines[i])
			if c := createdBy.FindStringSubmatch(line); c != nil {
				g.creator, g.parent = c[1], c[2]
				if i+1 < len(lines) {
					if f := k8sFile.FindStringSubmatch(lines[i+1]); f != nil {
						g.createdAt = f[1]
					}
				}
				break
			}
			if !strings.HasPrefix(lines[i], "\t") {
				g.functions = append(g.functions, line[:strings.LastIndex(line, "(")])
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// proberWorkers says which goroutines run the kubelet's probe workers and who started them, read
// from the running process: the evidence behind note 09's first diagram.
func proberWorkers() (string, error) {
	all, err := goroutines()
	if err != nil {
		return "", err
	}
	byID := map[string]goroutine{}
	for _, g := range all {
		byID[g.id] = g
	}
	var workers []goroutine
	for _, g := range all {
		if slices.Contains(g.functions, "k8s.io/kubernetes/pkg/kubelet/prober.(*worker).run") {
			workers = append(workers, g)
		}
	}
	if len(workers) == 0 {
		return "", fmt.Errorf("no goroutine runs prober.(*worker).run")
	}
	var sites []string
	parents := map[string]bool{}
	for _, w := range workers {
		if w.creator != "k8s.io/kubernetes/pkg/kubelet/prober.(*manager).AddPod" {
			return "", fmt.Errorf("a probe worker started by %s, not by the probe manager's AddPod", w.creator)
		}
		if !slices.Contains(sites, w.createdAt) {
			sites = append(sites, w.createdAt)
		}
		parents[w.parent] = true
	}
	slices.Sort(sites)
	for i := 1; i < len(sites); i++ { // one file, its lines: prober_manager.go:215, :227, :239
		if file, line, ok := strings.Cut(sites[i], ":"); ok && strings.HasPrefix(sites[0], file+":") {
			sites[i] = ":" + line
		}
	}
	where := "another goroutine"
	if len(parents) == 1 {
		for id := range parents {
			switch fns := byID[id].functions; {
			case slices.Contains(fns, "k8s.io/kubernetes/pkg/kubelet.(*podWorkers).podWorkerLoop"):
				where = "the pod's worker (SyncPod: \"Ensure the pod is being probed\")"
			case slices.Contains(fns, "k8s.io/kubernetes/pkg/kubelet.(*Kubelet).syncLoop"):
				where = "the sync loop's goroutine"
			}
		}
	}
	return fmt.Sprintf("the running process: %d goroutines run prober.(*worker).run, one per probe, started\n"+
		"by prober.(*manager).AddPod (%s)\nin %s", len(workers), strings.Join(sites, ", "), where), nil
}
