package routes

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
)

var update = flag.Bool("update", false, "rewrite testdata/routes.golden and notes/kubelet-routes.md (en, zh) from the real server")

// generated are the files the table writes, and how.
var generated = []struct {
	path  string
	write func(*Table, *bytes.Buffer) error
}{
	{"testdata/routes.golden", func(t *Table, b *bytes.Buffer) error { return t.Text(b) }},
	{repo.Path("notes", "kubelet-routes.md"), func(t *Table, b *bytes.Buffer) error { return t.Markdown(b, "en") }},
	{repo.Path("notes", "zh", "kubelet-routes.md"), func(t *Table, b *bytes.Buffer) error { return t.Markdown(b, "zh") }},
}

// TestGenerated: the golden file and the notes are what the real server gives today.
func TestGenerated(t *testing.T) {
	table, err := Build(context.Background(), "walkthrough")
	require.NoError(t, err)
	for _, g := range generated {
		var b bytes.Buffer
		require.NoError(t, g.write(table, &b))
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(g.path), 0o755))
			require.NoError(t, os.WriteFile(g.path, b.Bytes(), 0o644))
			continue
		}
		want, err := os.ReadFile(g.path)
		require.NoError(t, err)
		assert.Equal(t, string(want), b.String(), "%s is out of date: go test ./chapters/04-runkubelet/routes -update", g.path)
	}
}

func find(t *testing.T, table *Table, path string) Route {
	t.Helper()
	for _, r := range table.Routes {
		if r.Path == path {
			return r
		}
	}
	require.Failf(t, "no route", "the table has no %s", path)
	return Route{}
}

// TestWhatTheKubeletChecks pins facts the notes state, so that a change shows here by name.
func TestWhatTheKubeletChecks(t *testing.T) {
	table, err := Build(context.Background(), "walkthrough")
	require.NoError(t, err)
	tests := []struct {
		path string
		on   map[string]string
		want []Check
	}{
		{"/pods/", map[string]string{Secure: "GET", ReadOnly: "GET"}, []Check{{"GET", "get", []string{"pods", "proxy"}}}},
		{"/stats/summary", map[string]string{Secure: "GET POST", ReadOnly: "GET POST"}, []Check{{"GET", "get", []string{"stats"}}, {"POST", "create", []string{"stats"}}}},
		{"/exec/{podNamespace}/{podID}/{containerName}", map[string]string{Secure: "GET POST"}, []Check{{"GET", "get", []string{"proxy"}}, {"POST", "create", []string{"proxy"}}}},
		{"/exec/", map[string]string{ReadOnly: "disabled"}, nil},
		{"/healthz", map[string]string{Secure: "any", ReadOnly: "any", Healthz: "any"}, []Check{{"GET", "get", []string{"healthz", "proxy"}}}},
		{"/configz", map[string]string{Secure: "any"}, []Check{{"GET", "get", []string{"configz", "proxy"}}}},
		{"/metrics/cadvisor", map[string]string{Secure: "any", ReadOnly: "any"}, []Check{{"GET", "get", []string{"metrics"}}}},
		{"/logs/", map[string]string{Secure: "GET", ReadOnly: "disabled"}, []Check{{"GET", "get", []string{"log"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := find(t, table, tt.path)
			assert.Equal(t, tt.on, r.On)
			assert.Equal(t, tt.want, r.Checks)
		})
	}
	var names []string
	for _, s := range table.Services {
		names = append(names, s.Socket+" "+s.Name)
	}
	assert.Equal(t, []string{
		"/pod-resources/kubelet.sock v1.PodResourcesLister",
		"/pod-resources/kubelet.sock v1alpha1.PodResourcesLister",
		"/pods-api/pods-api.sock v1alpha1.Pods",
	}, names)
}

func TestConcrete(t *testing.T) {
	assert.Equal(t, "/exec/x/x/x", concrete("/exec/{podNamespace}/{podID}/{containerName}"))
	assert.Equal(t, "/logs/x", concrete("/logs/{logpath:*}"))
	assert.Equal(t, "/run/x", concrete("/run/"))
	assert.Equal(t, "/pods", concrete("/pods"))
}
