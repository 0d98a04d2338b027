package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

func TestMain(m *testing.M) {
	code := m.Run()
	realkubelet.RemoveRootDirs() // what the stopped kubelets' pod workers made again
	os.Exit(code)
}

// Every flag is checked before the kubelet starts, with one line naming the flag and the value.
func TestValidate(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	busy := l.Addr().(*net.TCPAddr).Port
	existing := filepath.Join(t.TempDir(), "kubelet.log")
	require.NoError(t, os.WriteFile(existing, []byte("an earlier run's log\n"), 0o644))

	good := runOptions{nodeName: "walkthrough", wait: 30 * time.Second}
	tests := []validtable.Case[runOptions]{
		{Name: "the defaults", Change: func(*runOptions) {}},
		{Name: "a log to stderr", Change: func(o *runOptions) { o.kubeletLog = "-" }},
		{Name: "a new log file", Change: func(o *runOptions) { o.kubeletLog = filepath.Join(t.TempDir(), "new.log") }},
		{Name: "an upper-case node name", Change: func(o *runOptions) { o.nodeName = "Walkthrough" }, WantErr: `--node-name "Walkthrough": a lowercase RFC 1123 subdomain`},
		{Name: "an empty node name", Change: func(o *runOptions) { o.nodeName = "" }, WantErr: `--node-name "": must not be empty`},
		{Name: "a negative port", Change: func(o *runOptions) { o.readOnlyPort = -1 }, WantErr: "--read-only-port -1: a port is 0 (pick a free one) or 1 to 65535"},
		{Name: "a port too large", Change: func(o *runOptions) { o.readOnlyPort = 70000 }, WantErr: "--read-only-port 70000: a port is 0 (pick a free one) or 1 to 65535"},
		{Name: "a port in use", Change: func(o *runOptions) { o.readOnlyPort = busy }, WantErr: "--read-only-port " + strconv.Itoa(busy) + ": listen tcp 127.0.0.1:" + strconv.Itoa(busy) + ": bind: address already in use"},
		{Name: "a wait of 0", Change: func(o *runOptions) { o.wait = 0 }, WantErr: "--wait 0s: must be more than 0"},
		{Name: "a log file that exists", Change: func(o *runOptions) { o.kubeletLog = existing }, WantErr: "--kubelet-log " + existing + ": the file exists; name a new one (it is never overwritten)"},
	}
	validtable.Run(t, func() *runOptions { o := good; return &o }, (*runOptions).validate, tests)
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "an earlier run's log\n", string(data))
}
