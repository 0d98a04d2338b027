package program

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

func TestNodeName(t *testing.T) {
	tests := []struct{ name, want string }{
		{"walkthrough", ""},
		{"node-2.example", ""},
		{"", `--node-name "": must not be empty`},
		{"Walkthrough", `--node-name "Walkthrough": a lowercase RFC 1123 subdomain`},
		{"bad_name", `--node-name "bad_name": a lowercase RFC 1123 subdomain`},
		{strings.Repeat("n", 63), ""},
		{strings.Repeat("n", 64), `64 characters; at most 63, since the kubelet puts the name in the Node's kubernetes.io/hostname label`},
		{strings.Repeat("a", 62) + "." + strings.Repeat("b", 62), `125 characters; at most 63`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NodeName("--node-name", tt.name)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestPositive(t *testing.T) {
	assert.NoError(t, Positive("--timeout", time.Second))
	assert.EqualError(t, Positive("--timeout", 0), "--timeout 0s: must be more than 0")
	assert.EqualError(t, Positive("--timeout", -time.Second), "--timeout -1s: must be more than 0")
}

func TestPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	assert.NoError(t, Port("--read-only-port", 0))
	assert.EqualError(t, Port("--read-only-port", -1), "--read-only-port -1: a port is 0 (pick a free one) or 1 to 65535")
	assert.EqualError(t, Port("--read-only-port", 65536), "--read-only-port 65536: a port is 0 (pick a free one) or 1 to 65535")
	err = Port("--read-only-port", busy)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--read-only-port "+strconv.Itoa(busy)+": listen tcp 127.0.0.1:"+strconv.Itoa(busy))
}

func TestNewFile(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	require.NoError(t, os.WriteFile(existing, []byte("mine"), 0o644))

	f, err := NewFile("--trace", filepath.Join(dir, "new.out"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.FileExists(t, filepath.Join(dir, "new.out"))

	_, err = NewFile("--trace", existing)
	assert.ErrorIs(t, err, os.ErrExist)
	assert.Contains(t, err.Error(), "--trace "+existing+": the file exists; name a new one (it is never overwritten)")
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(data), "the reader's file is unchanged")

	_, err = NewFile("--trace", filepath.Join(dir, "no-such-dir", "trace.out"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "--trace "+filepath.Join(dir, "no-such-dir", "trace.out")+": its directory: ")
	_, err = NewFile("--trace", filepath.Join(existing, "trace.out"))
	assert.EqualError(t, err, "--trace "+filepath.Join(existing, "trace.out")+": lstat "+filepath.Join(existing, "trace.out")+": not a directory")
	assert.NoError(t, Absent("--trace", filepath.Join(dir, "another")))
	assert.NoFileExists(t, filepath.Join(dir, "another"), "Absent only looks")
	_, err = NewFile("--trace", "")
	assert.EqualError(t, err, `--trace "": name a file`)
}

func TestDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	abs, err := Directory("--static-pod-path", dir)
	require.NoError(t, err)
	assert.Equal(t, dir, abs)
	_, err = Directory("--static-pod-path", file)
	assert.EqualError(t, err, "--static-pod-path "+file+": not a directory")
	_, err = Directory("--static-pod-path", filepath.Join(dir, "nope"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorContains(t, err, "--static-pod-path "+filepath.Join(dir, "nope")+": stat ")
	_, err = Directory("--static-pod-path", "")
	assert.EqualError(t, err, `--static-pod-path "": name a directory`)
}

// Chapters 04 and 05 check their kubelet flags here, before any kubelet starts, with one line
// naming the flag and the value; a file the reader names is left as it was.
func TestKubeletFlagsValidate(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	busy := l.Addr().(*net.TCPAddr).Port
	existing := filepath.Join(t.TempDir(), "kubelet.log")
	require.NoError(t, os.WriteFile(existing, []byte("an earlier run's log\n"), 0o644))

	good := KubeletFlags{NodeName: "walkthrough", Wait: 30 * time.Second}
	tests := []validtable.Case[KubeletFlags]{
		{Name: "the defaults", Change: func(*KubeletFlags) {}},
		{Name: "a log to stderr", Change: func(f *KubeletFlags) { f.KubeletLog = "-" }},
		{Name: "a new log file", Change: func(f *KubeletFlags) { f.KubeletLog = filepath.Join(t.TempDir(), "new.log") }},
		{Name: "an upper-case node name", Change: func(f *KubeletFlags) { f.NodeName = "Walkthrough" }, WantErr: `--node-name "Walkthrough": a lowercase RFC 1123 subdomain`},
		{Name: "an empty node name", Change: func(f *KubeletFlags) { f.NodeName = "" }, WantErr: `--node-name "": must not be empty`},
		{Name: "a node name too long for its pods", Change: func(f *KubeletFlags) { f.NodeName = strings.Repeat("a", 254) }, WantErr: `--node-name`},
		{Name: "a negative port", Change: func(f *KubeletFlags) { f.ReadOnlyPort = -1 }, WantErr: "--read-only-port -1: a port is 0 (pick a free one) or 1 to 65535"},
		{Name: "a port too large", Change: func(f *KubeletFlags) { f.ReadOnlyPort = 70000 }, WantErr: "--read-only-port 70000: a port is 0 (pick a free one) or 1 to 65535"},
		{Name: "a port in use", Change: func(f *KubeletFlags) { f.ReadOnlyPort = busy }, WantErr: "--read-only-port " + strconv.Itoa(busy) + ": listen tcp 127.0.0.1:" + strconv.Itoa(busy) + ": bind: address already in use"},
		{Name: "a wait of 0", Change: func(f *KubeletFlags) { f.Wait = 0 }, WantErr: "--wait 0s: must be more than 0"},
		{Name: "a negative wait", Change: func(f *KubeletFlags) { f.Wait = -time.Minute }, WantErr: "--wait -1m0s: must be more than 0"},
		{Name: "a log file that exists", Change: func(f *KubeletFlags) { f.KubeletLog = existing }, WantErr: "--kubelet-log " + existing + ": the file exists; name a new one (it is never overwritten)"},
	}
	validtable.Run(t, func() *KubeletFlags { f := good; return &f }, (*KubeletFlags).Validate, tests)
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "an earlier run's log\n", string(data))
}
