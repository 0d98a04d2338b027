package minicluster

import (
	"fmt"
	"os"
	"sync"

	"k8s.io/klog/v2"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
)

// programTB lets a program, not a test, call kube-apiserver's test server: StartTestServer takes
// a ktesting.TB, an interface meant to be implemented outside the testing package
// (test/utils/ktesting/tcontext.go#L68-L89 (type TB interface)). Logs go to klog, failures are
// remembered (and Fatal panics, since a program has no test to end), and cleanups run, last
// first, when the cluster stops, after TearDownFn has cancelled the apiserver's context.
type programTB struct {
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

func (t *programTB) Attr(string, string) {}
func (t *programTB) Chdir(dir string) {
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
}
func (t *programTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}
func (t *programTB) Error(args ...any) { t.Log(args...); t.Fail() }
func (t *programTB) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.Fail()
}
func (t *programTB) Fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}
func (t *programTB) FailNow() { t.Fail(); panic("minicluster: the apiserver test server failed") }
func (t *programTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *programTB) Fatal(args ...any)                 { t.Error(args...); t.FailNow() }
func (t *programTB) Fatalf(format string, args ...any) { t.Errorf(format, args...); t.FailNow() }
func (t *programTB) Helper()                           {}
func (t *programTB) Log(args ...any)                   { klog.V(2).InfoDepth(1, fmt.Sprint(args...)) }
func (t *programTB) Logf(format string, args ...any) {
	klog.V(2).InfoDepth(1, fmt.Sprintf(format, args...))
}
func (t *programTB) Name() string                     { return "minicluster" }
func (t *programTB) Setenv(key, value string)         { _ = os.Setenv(key, value) }
func (t *programTB) Skip(args ...any)                 { t.Log(args...); t.SkipNow() }
func (t *programTB) Skipf(format string, args ...any) { t.Logf(format, args...); t.SkipNow() }
func (t *programTB) SkipNow()                         { panic("minicluster: the apiserver test server asked to skip") }
func (t *programTB) Skipped() bool                    { return false }
func (t *programTB) TempDir() string {
	dir, err := os.MkdirTemp("", "minicluster-tb-")
	if err != nil {
		t.Fatal(err)
	}
	// The apiserver keeps its service account signing key here: removed too should a kubelet
	// end the process.
	unregister := kubeletlog.AtExit(func() { _ = os.RemoveAll(dir) })
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		unregister()
	})
	return dir
}

// runCleanups runs the registered cleanups, last registered first.
func (t *programTB) runCleanups() {
	t.mu.Lock()
	cleanups := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
}
