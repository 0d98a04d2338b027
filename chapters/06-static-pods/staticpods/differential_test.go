package staticpods

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// The kubelet lower-cases its node name (nodeutil.GetHostname); the file source does not, and
// an upper-case name makes every pod invalid (spec.nodeName must be lower case). Both are tried.
var nodes = []types.NodeName{"node-a", "Node-B"}

func corpusDir(t *testing.T) string {
	dir, err := filepath.Abs("testdata/manifests")
	require.NoError(t, err)
	return dir
}

// A seed is one file under testdata/, its bytes as a manifest.
type seed struct {
	path string // relative to testdata/
	data []byte
}

// seeds reads every file under testdata/ — the corpus, its sub-directories, symlinks followed —
// except testdata/fuzz/, which the go command reads itself as the fuzzer's own corpus. The one
// file that cannot be read is the corpus's dangling symlink, on purpose; any other read error
// fails.
func seeds(t testing.TB) []seed {
	t.Helper()
	var out []seed
	require.NoError(t, filepath.WalkDir("testdata", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == filepath.Join("testdata", "fuzz") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // dangling.yaml: a symlink to nothing, refused before any decoding
			}
			if err == nil && st.IsDir() {
				return nil // a symlink to a directory: its files are walked where they live
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, seed{strings.TrimPrefix(path, "testdata"+string(filepath.Separator)), data})
		return nil
	}))
	require.NotEmpty(t, out, "no seeds under testdata/")
	return out
}

// sameDecode decodes data as the manifest at source on node, with the kubelet's code and with
// the toy's, and requires that both refuse it or both make the same pod, field by field. It
// reports whether they accepted it. The corpus test and the fuzzer both compare through it.
func sameDecode(t testing.TB, data []byte, source string, node types.NodeName) (accepted bool) {
	t.Helper()
	want, wantErr := realDecode(bytes.Clone(data), source, node)
	got, gotErr := Decode(data, source, node)
	if wantErr != nil {
		require.Error(t, gotErr, "the kubelet refuses it (%v), the toy accepts", wantErr)
		return false
	}
	require.NoError(t, gotErr, "the kubelet accepts it, the toy refuses")
	require.Equal(t, want, got, "the kubelet's pod, then the toy's")
	return true
}

// Every file under testdata/, decoded by the kubelet's code and by the toy's: both refuse it, or
// both make the same pod. These are the fuzzer's seeds too.
func TestDecodeMatchesKubelet(t *testing.T) {
	dir := corpusDir(t)
	accepted := 0
	for _, s := range seeds(t) {
		file := filepath.Join(filepath.Dir(dir), s.path)
		for _, node := range nodes {
			t.Run(s.path+"@"+string(node), func(t *testing.T) {
				if sameDecode(t, s.data, file, node) {
					accepted++
				}
			})
		}
	}
	assert.Greater(t, accepted, 10, "the corpus must have valid manifests too")
}

// The whole corpus directory, through the kubelet's file source and PodConfig and through the
// toy's List and Merger: the same first update.
func TestListMatchesKubeletFileSource(t *testing.T) {
	dir := corpusDir(t)
	for _, node := range nodes {
		t.Run(string(node), func(t *testing.T) {
			want := startReal(t, dir, node, time.Hour).firstUpdate(t)

			listing, err := List(dir, node)
			require.NoError(t, err)
			got := NewMerger().Merge(listing.Pods)
			require.Len(t, got, 1)
			assert.Equal(t, want.Op, got[0].Op)
			assert.Equal(t, want.Source, got[0].Source)
			assert.Equal(t, comparable(want.Pods), comparable(got[0].Pods))

			var names []string
			for _, p := range comparable(got[0].Pods) {
				names = append(names, p.Namespace+"/"+strings.TrimSuffix(p.Name, "-"+string(node)))
			}
			if node != types.NodeName(strings.ToLower(string(node))) {
				assert.Empty(t, names, "spec.nodeName %q is not a valid name", node)
				return
			}
			assert.Equal(t, []string{
				"default/dup", "default/from-json", "default/linked", "default/multi-first",
				"default/preset-uid", "default/web", "kube-system/hostpath-and-status", "kube-system/no-extension",
			}, names)
		})
	}
}

// Why each rejected corpus file is rejected, as List reports it.
func TestListReasons(t *testing.T) {
	dir := corpusDir(t)
	listing, err := List(dir, "node-a")
	require.NoError(t, err)
	reasons := map[string]string{}
	for _, r := range listing.Rejected {
		reasons[strings.TrimPrefix(r.File, dir+"/")] = r.Reason.Error()
	}
	want := map[string]string{
		"binary.bin":              "couldn't parse as pod",
		"configmap.yaml":          "the manifest is a *core.ConfigMap, not a Pod",
		"dangling.yaml":           "no such file or directory",
		"deployment.yaml":         "couldn't parse as pod",
		"dup-a.yaml":              "pod default/dup-node-a is declared again by dup-b.yaml, which wins",
		"empty.yaml":              "couldn't parse as pod",
		"env-from-configmap.yaml": "static pods may not reference configmaps",
		"invalid-name.yaml":       "invalid pod",
		"no-kind.yaml":            "couldn't parse as pod",
		"podlist.yaml":            "the manifest is a *core.PodList, not a Pod",
		"scheduling-gates.yaml":   "invalid pod",
		"secret-volume.yaml":      "static pods may not reference secrets",
		"service-account.yaml":    "static pods may not reference serviceaccounts",
		"subdir":                  "a directory: the kubelet does not look into sub-directories",
		"targets":                 "a directory",
		"unnamed.yaml":            "name is needed for the pod",
	}
	require.Len(t, reasons, len(want), "%v", reasons)
	for file, reason := range want {
		assert.Contains(t, reasons[file], reason, file)
	}
}

// The size limit, at its edge: one byte under is read, the limit itself is refused.
func TestSizeLimitMatchesKubelet(t *testing.T) {
	dir := t.TempDir()
	manifest := func(name string, size int) {
		head := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: main\n    image: registry.k8s.io/pause:3.10.2\n#", name)
		body := head + strings.Repeat("x", size-len(head)-1) + "\n"
		require.Len(t, body, size)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(body), 0o644))
	}
	manifest("just-under", MaxManifestSize-1)
	manifest("at-the-limit", MaxManifestSize)

	want := startReal(t, dir, "node", time.Hour).firstUpdate(t)
	listing, err := List(dir, "node")
	require.NoError(t, err)
	require.Len(t, listing.Pods, 1)
	assert.Equal(t, "just-under-node", listing.Pods[0].Name)
	assert.Equal(t, comparable(want.Pods), comparable(NewMerger().Merge(listing.Pods)[0].Pods))
	require.Len(t, listing.Rejected, 1)
	assert.Contains(t, listing.Rejected[0].Reason.Error(), "the kubelet's limit")
}

// An operation as the tests compare them: the op and the pod, by name and UID.
type op struct {
	Op   kubetypes.PodOperation
	Name string
	UID  types.UID
}

// flatten lists the operations of an edit's updates, in a canonical order: the kubelet splits
// an edit over one update per inotify event where the toy, re-listing, may send one update, so
// the two are compared as the set of operations each edit caused.
func flatten(updates []kubetypes.PodUpdate) []op {
	var out []op
	for _, u := range updates {
		for _, p := range u.Pods {
			out = append(out, op{u.Op, p.Namespace + "/" + p.Name, p.UID})
		}
		if len(u.Pods) == 0 {
			out = append(out, op{u.Op, "(none)", ""})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Op != out[j].Op {
			return out[i].Op < out[j].Op
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// A scripted series of edits on one directory watched by both the kubelet's file source and the
// toy's: after each edit, both must have sent the same operations on the same pods.
//
// An edit has settled once each side has sent what it causes — the kubelet the operations the
// step expects, the toy as many as the kubelet — however long the machine takes (patience is
// generous), and then nothing more for a while (quiet, a few re-list periods). Nothing is decided
// by how fast the machine is: a slow side is waited for, and anything extra it sends later is
// still caught, by the quiet window or by the next step.
func TestEditsMatchKubelet(t *testing.T) {
	tier.Long(t, "a directory watched through a series of edits")
	const period = 250 * time.Millisecond
	const patience, quiet = time.Minute, 4 * period
	dir := t.TempDir()
	write := func(name, content string) { // atomically, as editors and `kubectl cp` do
		tmp := filepath.Join(dir, ".tmp-"+name)
		require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
	}
	pod := func(name, image, extra string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n%sspec:\n  containers:\n  - name: main\n    image: %s\n", name, extra, image)
	}
	write("web.yaml", pod("web", "nginx:1", ""))
	write("etcd.yaml", pod("etcd", "etcd:3", "  namespace: kube-system\n"))

	real := startReal(t, dir, "node-a", period)
	toy := startToy(t, dir, "node-a", period)

	uid := "  uid: 3a1f8a52-0000-4000-8000-000000000001\n"
	steps := []struct {
		name string
		edit func()
		want []kubetypes.PodOperation // the operations expected, for a readable failure
	}{
		// want is in flatten's order: ADD, DELETE, REMOVE, UPDATE, RECONCILE.
		{"start", func() {}, []kubetypes.PodOperation{kubetypes.ADD, kubetypes.ADD}},
		{"create", func() { write("scheduler.yaml", pod("scheduler", "sched:1", "")) }, []kubetypes.PodOperation{kubetypes.ADD}},
		{"modify", func() { write("web.yaml", pod("web", "nginx:2", "")) }, []kubetypes.PodOperation{kubetypes.ADD, kubetypes.REMOVE}},
		{"rename", func() {
			require.NoError(t, os.Rename(filepath.Join(dir, "etcd.yaml"), filepath.Join(dir, "etcd-renamed.yaml")))
		}, []kubetypes.PodOperation{kubetypes.ADD, kubetypes.REMOVE}},
		{"break", func() { write("web.yaml", "this: is: not yaml") }, []kubetypes.PodOperation{kubetypes.REMOVE}},
		{"fix", func() { write("web.yaml", pod("web", "nginx:2", "")) }, []kubetypes.PodOperation{kubetypes.ADD}},
		{"delete", func() { require.NoError(t, os.Remove(filepath.Join(dir, "scheduler.yaml"))) }, []kubetypes.PodOperation{kubetypes.REMOVE}},
		{"hidden file", func() { write(".swap.yaml", pod("hidden", "x:1", "")) }, nil},
		{"same content again", func() { write("web.yaml", pod("web", "nginx:2", "")) }, nil},
		{"preset uid", func() { write("fixed.yaml", pod("fixed", "app:1", uid)) }, []kubetypes.PodOperation{kubetypes.ADD}},
		{"preset uid, new labels", func() { write("fixed.yaml", pod("fixed", "app:1", uid+"  labels: {v: \"2\"}\n")) }, []kubetypes.PodOperation{kubetypes.UPDATE}},
		{"preset uid, new image", func() { write("fixed.yaml", pod("fixed", "app:2", uid+"  labels: {v: \"2\"}\n")) }, []kubetypes.PodOperation{kubetypes.UPDATE}},
		{"duplicate name, later file", func() { write("zz-web.yaml", pod("web", "nginx:3", "")) }, []kubetypes.PodOperation{kubetypes.ADD, kubetypes.REMOVE}},
		// The last steps stay clear of two moments the notes list where the kubelet differs for
		// a while, and by how a re-list falls between events: a removed file of a duplicate takes
		// the name's pod with it until a re-list brings the other file's back (the store keys by
		// namespace/name), and a directory left with no manifest gets an empty set while the
		// store keeps its pods. So the winning duplicate is broken (both then take the other
		// file's pod, the kubelet at its re-list) and one manifest stays.
		{"the duplicate that won, broken", func() { write("zz-web.yaml", "this: is: not yaml") },
			[]kubetypes.PodOperation{kubetypes.ADD, kubetypes.REMOVE}},
		{"remove all but one", func() {
			for _, f := range []string{"web.yaml", "etcd-renamed.yaml"} {
				require.NoError(t, os.Remove(filepath.Join(dir, f)))
			}
		}, []kubetypes.PodOperation{kubetypes.REMOVE, kubetypes.REMOVE}},
	}
	realNext, toyNext := 0, 0
	for _, step := range steps {
		step.edit()
		sent := real.waitOps(t, realNext, len(step.want), patience, "step %q: the kubelet", step.name)
		toy.waitOps(t, toyNext, len(flatten(sent)), patience, "step %q: the toy", step.name)
		time.Sleep(quiet) // not to wait for anything: the window in which nothing more may come
		var realOps, toyOps []kubetypes.PodUpdate
		realOps, realNext = real.since(realNext)
		toyOps, toyNext = toy.since(toyNext)
		var kinds []kubetypes.PodOperation
		for _, o := range flatten(realOps) {
			kinds = append(kinds, o.Op)
		}
		require.Equal(t, step.want, kinds, "step %q: the kubelet sent %v", step.name, flatten(realOps))
		require.Equal(t, flatten(realOps), flatten(toyOps), "step %q", step.name)
		var realPods, toyPods []*v1.Pod
		for _, u := range realOps {
			realPods = append(realPods, u.Pods...)
		}
		for _, u := range toyOps {
			toyPods = append(toyPods, u.Pods...)
		}
		require.Equal(t, comparable(realPods), comparable(toyPods), "step %q", step.name)
	}
}

// FuzzDecode feeds arbitrary bytes to both decoders, on each node of nodes (one whose name is
// valid, so that pods are accepted, and one whose upper case makes every pod invalid): neither
// may panic, both must accept or refuse alike, and where they accept the pods must be equal.
// Its seeds are every file under testdata/ (and testdata/fuzz/FuzzDecode, read by the go
// command); before fuzzing it checks that the kubelet accepts some of them, so the target cannot
// decay into comparing refusals only — sameDecode then requires the toy to accept them too.
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 2m ./chapters/06-static-pods/staticpods/
func FuzzDecode(f *testing.F) {
	const source = "/etc/kubernetes/manifests/fuzz.yaml"
	all := append(seeds(f), seed{"json", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)})
	accepted := 0
	for _, s := range all {
		f.Add(s.data)
		for _, node := range nodes {
			if _, err := realDecode(bytes.Clone(s.data), source, node); err == nil {
				accepted++
			}
		}
	}
	require.Greater(f, accepted, 5, "the kubelet must accept some seeds, or the fuzzer compares refusals only")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, node := range nodes {
			sameDecode(t, data, source, node)
		}
	})
}
