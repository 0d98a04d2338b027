package runcshim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// full is a machine with every capability; limited is this kind of CI machine: no
// CAP_SYS_RESOURCE in the bounding set, so none in the effective set either.
var (
	full    = Machine{bounding: 1<<41 - 1, effective: 1<<41 - 1, oomAdj: 0}
	limited = Machine{bounding: (1<<41 - 1) &^ (1 << unix.CAP_SYS_RESOURCE), effective: (1<<41 - 1) &^ (1 << unix.CAP_SYS_RESOURCE), oomAdj: 0}
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want invocation
	}{
		{"containerd's create", []string{"--root", "/run/containerd/runc/k8s.io", "--log", "/x/log.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/b/init.pid", "abc"},
			invocation{command: "create", bundle: "/b"}},
		{"docker's create, --bundle=", []string{"--systemd-cgroup", "create", "--bundle=/b2", "id"}, invocation{command: "create", bundle: "/b2"}},
		{"run with -b", []string{"run", "-b", "/b3", "id"}, invocation{command: "run", bundle: "/b3"}},
		{"create in the working directory", []string{"create", "id"}, invocation{command: "create", bundle: "."}},
		{"exec with a process file", []string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, invocation{command: "exec", process: "/tmp/p.json"}},
		{"exec with -p", []string{"exec", "-p", "/tmp/q.json", "id"}, invocation{command: "exec", process: "/tmp/q.json"}},
		{"a value that looks like a command", []string{"--root", "create", "state", "id"}, invocation{command: "state"}},
		{"others pass", []string{"--version"}, invocation{}},
		{"delete", []string{"--root", "/r", "delete", "--force", "id"}, invocation{command: "delete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, parse(tt.args))
		})
	}
}

func TestAdjust(t *testing.T) {
	privileged := func() map[string]any {
		return map[string]any{
			"oomScoreAdj": float64(-998),
			"capabilities": map[string]any{
				"bounding":  []any{"CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"},
				"effective": []any{"CAP_CHOWN", "CAP_SYS_RESOURCE"},
				"permitted": []any{"CAP_SYS_RESOURCE"},
			},
		}
	}
	tests := []struct {
		name    string
		m       Machine
		process map[string]any
		changed bool
		want    map[string]any
	}{
		{"a full machine changes nothing", full, privileged(), false, privileged()},
		{"a limited machine drops what it lacks and raises the oom_score_adj", limited, privileged(), true, map[string]any{
			"oomScoreAdj": 0,
			"capabilities": map[string]any{
				"bounding":  []any{"CAP_CHOWN", "CAP_SYS_ADMIN"},
				"effective": []any{"CAP_CHOWN"},
				"permitted": []any{},
			},
		}},
		{"an oom_score_adj above the shim's own stays", limited, map[string]any{"oomScoreAdj": float64(1000)}, false, map[string]any{"oomScoreAdj": float64(1000)}},
		{"a capability the table does not know is left to runc", limited, map[string]any{"capabilities": map[string]any{"bounding": []any{"CAP_NEW_ONE"}}}, false,
			map[string]any{"capabilities": map[string]any{"bounding": []any{"CAP_NEW_ONE"}}}},
		{"no capabilities, no oom_score_adj", limited, map[string]any{"args": []any{"sh"}}, false, map[string]any{"args": []any{"sh"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.changed, tt.m.adjust(tt.process))
			assert.Equal(t, tt.want, tt.process)
		})
	}
}

func TestRewriteKeepsTheRestOfTheSpec(t *testing.T) {
	dir := t.TempDir()
	spec := `{"ociVersion":"1.2.0","process":{"args":["/sbin/init"],"oomScoreAdj":-999,"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_KILL"]}},"root":{"path":"rootfs"},"annotations":{"a":"b"}}`
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(path, []byte(spec), 0o600))
	require.NoError(t, limited.rewrite(path, "process"))
	var got map[string]any
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, map[string]any{
		"ociVersion":  "1.2.0",
		"process":     map[string]any{"args": []any{"/sbin/init"}, "oomScoreAdj": float64(0), "capabilities": map[string]any{"bounding": []any{"CAP_KILL"}}},
		"root":        map[string]any{"path": "rootfs"},
		"annotations": map[string]any{"a": "b"},
	}, got)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the file keeps its mode")

	// A full machine leaves the file byte for byte.
	require.NoError(t, os.WriteFile(path, []byte(spec), 0o600))
	require.NoError(t, full.rewrite(path, "process"))
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, spec, string(data))
}

func TestExplain(t *testing.T) {
	assert.Equal(t, "nothing to change: the bounding set has every capability and CAP_SYS_RESOURCE is effective", full.Explain())
	assert.Equal(t, "removes CAP_SYS_RESOURCE (not in this machine's bounding set); raises an oom_score_adj below 0 to 0 (CAP_SYS_RESOURCE is not effective)", limited.Explain())
}

func TestRealRunc(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "runc")
	require.NoError(t, os.WriteFile(self, []byte("#!/bin/sh\n"), 0o755))
	other := t.TempDir()
	onPath := filepath.Join(other, "runc")
	require.NoError(t, os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755))

	t.Setenv("PATH", dir+string(filepath.ListSeparator)+other)
	got, err := realRunc(self)
	require.NoError(t, err)
	assert.Equal(t, onPath, got, "the first runc on PATH that is not the shim")

	require.NoError(t, os.WriteFile(self+".real", []byte("#!/bin/sh\n"), 0o755))
	got, err = realRunc(self)
	require.NoError(t, err)
	assert.Equal(t, self+".real", got, "runc.real beside the shim comes first")

	t.Setenv("PATH", dir)
	require.NoError(t, os.Remove(self+".real"))
	_, err = realRunc(self)
	assert.ErrorContains(t, err, "no runc to run")
}
