package staticpods

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/config"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/benchratio"
)

// The kubelet's file source lists a directory in an unexported method; the benchmark calls it
// on a fresh source each time, as the kubelet does on every re-list, with the real PodConfig
// merging what it sends.

//go:linkname realNewSourceFile k8s.io/kubernetes/pkg/kubelet/config.newSourceFile
func realNewSourceFile(path string, nodeName types.NodeName, period time.Duration, updates unsafe.Pointer) unsafe.Pointer

//go:linkname realListConfig k8s.io/kubernetes/pkg/kubelet/config.(*sourceFile).listConfig
func realListConfig(s unsafe.Pointer, logger klog.Logger) error

// manifestDir writes n manifests, each a small pod like examples/static-pods/web.yaml.
func manifestDir(b *testing.B, n int) string {
	dir := b.TempDir()
	for i := range n {
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-%04d\n  labels: {app: bench}\nspec:\n  containers:\n  - name: main\n    image: registry.k8s.io/nginx-slim:0.27\n    ports:\n    - containerPort: 80\n", i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pod-%04d.yaml", i)), []byte(m), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkLoadManifests reads a directory of 1, 100 and 1,000 manifests into pods and merges
// them: the toy's List and Merger against the kubelet's listConfig and PodConfig. The real side
// reports the ratio, x-toy/real.
func BenchmarkLoadManifests(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		dir := manifestDir(b, n)
		var sides benchratio.Sides
		b.Run(fmt.Sprintf("manifests=%d/toy", n), func(b *testing.B) {
			// As in PodConfig.Run: the source hands each set to the goroutine that merges.
			sets := make(chan []*v1.Pod)
			defer close(sets)
			go func() {
				merger := NewMerger()
				for set := range sets {
					merger.Merge(set)
				}
			}()
			for b.Loop() {
				listing, err := List(dir, "node")
				if err != nil || len(listing.Pods) != n {
					b.Fatalf("listed %d pods: %v", len(listing.Pods), err)
				}
				sets <- listing.Pods
			}
			sides.Time(b, "toy")
			sides.Report(b, "toy", "real")
		})
		b.Run(fmt.Sprintf("manifests=%d/real", n), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := config.NewPodConfig(record.NewFakeRecorder(10), nil)
			ch := cfg.Channel(ctx, kubetypes.FileSource)
			go func() {
				for range cfg.Updates() {
				}
			}()
			// The channel's element type is unexported; its value is one pointer.
			updates := reflect.ValueOf(ch).UnsafePointer()
			logger := klog.Background()
			for b.Loop() {
				if err := realListConfig(realNewSourceFile(dir, "node", time.Hour, updates), logger); err != nil {
					b.Fatal(err)
				}
			}
			sides.Time(b, "real")
			sides.Report(b, "toy", "real")
		})
	}
}
