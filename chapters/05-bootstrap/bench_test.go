package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/05-bootstrap/toykubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
)

// The benchmark's kubelets are stopped, not gone: what their pod workers make again is removed last.
func TestMain(m *testing.M) {
	code := m.Run()
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}

// BenchmarkNewManifestVisible measures, for the toy and for the real kubelet side by side, the
// time from a new manifest landing in the static pod directory (an atomic rename, as editors and
// `minikube cp` do) to the pod being listed by /pods on the read-only port. The real side reports
// the ratio, x-toy/real.
func BenchmarkNewManifestVisible(b *testing.B) {
	_, restore, err := kubeletlog.ToFile("")
	if err != nil {
		b.Fatal(err)
	}
	defer restore()
	ctx := context.Background()
	start := map[string]func(dir string) (url string, stop func(), err error){
		"toy": func(dir string) (string, func(), error) {
			k, err := toykubelet.Start(ctx, toykubelet.StartOptions{NodeName: "bench", StaticPodPath: dir})
			if err != nil {
				return "", nil, err
			}
			return k.ReadOnlyURL, k.Stop, nil
		},
		"real": func(dir string) (string, func(), error) {
			k, err := realkubelet.Start(ctx, realkubelet.Options{NodeName: "bench", StaticPodPath: dir})
			if err != nil {
				return "", nil, err
			}
			return k.ReadOnlyURL, k.Stop, nil
		},
	}
	var sides benchratio.Sides
	for _, name := range []string{"toy", "real"} {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			url, stop, err := start[name](dir)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			i := 0
			for b.Loop() {
				i++
				pod := fmt.Sprintf("bench-%d", i)
				tmp := filepath.Join(dir, ".tmp")
				manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10.2\n", pod)
				if err := os.WriteFile(tmp, []byte(manifest), 0o644); err != nil {
					b.Fatal(err)
				}
				if err := os.Rename(tmp, filepath.Join(dir, pod+".yaml")); err != nil {
					b.Fatal(err)
				}
				waitFor(b, url, pod+"-bench", true)

				b.StopTimer() // take it away again, out of the measurement
				if err := os.Remove(filepath.Join(dir, pod+".yaml")); err != nil {
					b.Fatal(err)
				}
				waitFor(b, url, pod+"-bench", false)
				b.StartTimer()
			}
			sides.Time(b, name)
			sides.Report(b, "toy", "real")
		})
	}
}

// waitFor polls /pods until the pod is listed (or no longer listed).
func waitFor(b *testing.B, url, name string, present bool) {
	for {
		pods, err := realkubelet.PodsAt(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		found := false
		for _, p := range pods {
			found = found || p.Name == name
		}
		if found == present {
			return
		}
	}
}
