package toykubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
)

func manifest(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: main\n    image: %s\n", name, image)
}

func podNames(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url + "/pods")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var list v1.PodList
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// snapshot records every entry of a directory with its size and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		out[path] = fmt.Sprintf("%d %s %s", info.Size(), info.Mode(), info.ModTime())
		return nil
	}))
	return out
}

// Bad manifests do not stop good ones being served, and the toy never writes into the
// manifest directory.
func TestServesGoodManifestsBesideBadOnes(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(manifest("web", "nginx:1")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "db.yaml"), []byte(manifest("db", "postgres:16")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("kind: Pod\n  : :"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "unnamed.yaml"), []byte(manifest("", "x:1")), 0o644))
	before := snapshot(t, dir)

	r, err := Start(context.Background(), StartOptions{NodeName: "node", StaticPodPath: dir, FileCheckFrequency: 50 * time.Millisecond})
	require.NoError(t, err)
	defer r.Stop()
	require.Eventually(t, func() bool { return len(podNames(t, r.ReadOnlyURL)) == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"db-node", "web-node"}, podNames(t, r.ReadOnlyURL))
	time.Sleep(200 * time.Millisecond) // a few re-lists
	assert.Equal(t, before, snapshot(t, dir), "the manifest directory is read, never written")
}

// Many clients read /pods while manifests are created, rewritten and deleted: every answer is a
// valid PodList, and once the churn stops /pods shows exactly the manifests left. Run with -race.
// The churn lasts as many edits and reads as it takes, not a length of time: a loaded machine
// takes longer, and only one that cannot manage them in two minutes fails.
func TestPodsUnderLoadWhileManifestsChurn(t *testing.T) {
	const edits, reads = 300, 100
	dir := t.TempDir()
	r, err := Start(context.Background(), StartOptions{NodeName: "node", StaticPodPath: dir, FileCheckFrequency: 20 * time.Millisecond})
	require.NoError(t, err)
	defer r.Stop()

	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	var read, edited, failures atomic.Int64
	enough := func() bool { return read.Load() >= reads && edited.Load() >= edits }
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second}
			for ctx.Err() == nil && !enough() {
				resp, err := client.Get(r.ReadOnlyURL + "/pods")
				if err != nil {
					failures.Add(1)
					continue
				}
				var list v1.PodList
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || list.Kind != "PodList" {
					failures.Add(1)
				}
				read.Add(1)
			}
		})
	}
	want := map[string]bool{}
	wg.Go(func() {
		for i := 0; ctx.Err() == nil && !enough(); i++ {
			name := fmt.Sprintf("pod-%d", i%7)
			path := filepath.Join(dir, name+".yaml")
			if i%3 == 2 {
				_ = os.Remove(path)
				delete(want, name+"-node")
			} else {
				tmp := filepath.Join(dir, ".tmp")
				_ = os.WriteFile(tmp, []byte(manifest(name, fmt.Sprintf("img:%d", i))), 0o644)
				_ = os.Rename(tmp, path)
				want[name+"-node"] = true
			}
			edited.Add(1)
			time.Sleep(5 * time.Millisecond) // a pace for the edits, so that reads come between them
		}
	})
	wg.Wait()
	assert.Zero(t, failures.Load(), "of %d reads", read.Load())
	require.True(t, enough(), "in two minutes: %d reads of %d, %d edits of %d", read.Load(), reads, edited.Load(), edits)

	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(names, podNames(t, r.ReadOnlyURL)) }, 10*time.Second, 20*time.Millisecond)
}

// Stop ends every goroutine Start began — source, merger, sync loop, servers, GC.
func TestStartStopLeavesNothing(t *testing.T) {
	defer noLeaks(t,
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*Broadcaster).loop"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/tools/record.(*eventBroadcasterImpl).StartEventWatcher.func1"),
		goleak.IgnoreCurrent(),
	)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(manifest("web", "nginx:1")), 0o644))
	r, err := Start(context.Background(), StartOptions{NodeName: "node", StaticPodPath: dir})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(podNames(t, r.ReadOnlyURL)) == 1 }, 10*time.Second, 10*time.Millisecond)
	http.DefaultClient.CloseIdleConnections()
	r.Stop()
	assert.NoDirExists(t, r.RootDir)
	_, err = http.Get(r.ReadOnlyURL + "/healthz")
	assert.Error(t, err, "the read-only server is closed")
}
