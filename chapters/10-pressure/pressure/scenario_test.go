package pressure

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

const node types.NodeName = "walkthrough"

// The chapter's own scenario holds together with the reading notes' static pods, and its
// numbers are the ones the README's story tells.
func TestDefaultScenario(t *testing.T) {
	s, static, err := LoadScenario("../node.yaml", "../../../examples/static-pods", node)
	require.NoError(t, err)
	assert.Len(t, static, 5)
	assert.Len(t, s.Pods, 5)
	for _, p := range static {
		usage := s.UsageOf(p, node)
		assert.Positive(t, usage.Value(), "%s has a usage in node.yaml", p.Name)
	}
}

func TestScenarioProblems(t *testing.T) {
	static := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(static, "web.yaml"), []byte(
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec: {containers: [{name: c, image: i}]}\n"), 0o600))
	pod := "pods: [{metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}]\n"
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"the smallest", "memory: 1Gi\n", ""},
		{"a pod and usages", "memory: 1Gi\nusage: {default/a: 100Mi, default/web: 10Mi}\n" + pod, ""},
		{"no memory", "system: 1Gi\n", "memory: the node's capacity must be more than 0"},
		{"a misspelt field", "memory: 1Gi\nspikes: 1Gi\n", `unknown field "spikes"`},
		{"a usage of no pod", "memory: 1Gi\nusage: {default/b: 1Mi}\n" + pod, "usage of default/b: no such pod (have default/a, default/web)"},
		{"a static pod's kubelet name", "memory: 1Gi\nusage: {default/web-walkthrough: 1Mi}\n", "usage of default/web-walkthrough: no such pod"},
		{"more than the node has", "memory: 1Gi\nsystem: 900Mi\nusage: {default/a: 200Mi}\n" + pod, "use 1100Mi, more than the node's 1Gi"},
		{"a negative spike", "memory: 1Gi\nspike: -1Mi\n", "spike -1Mi: must not be negative"},
		{"a pod twice", "memory: 1Gi\npods: [{metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}, {metadata: {name: a}, spec: {containers: [{name: c, image: i}]}}]\n", "pod default/a: twice"},
		{"a pod named as the static one", "memory: 1Gi\npods: [{metadata: {name: web}, spec: {containers: [{name: c, image: i}]}}]\n", "pod default/web: twice (or also a static pod)"},
		{"a pod named as the static pod's mirror", "memory: 1Gi\npods: [{metadata: {name: web-walkthrough}, spec: {containers: [{name: c, image: i}]}}]\n", "the name the kubelet gives default/web's pod"},
		{"a pod without containers", "memory: 1Gi\npods: [{metadata: {name: a}}]\n", "pod default/a: no containers"},
		{"a pod the apiserver refuses", "memory: 1Gi\npods: [{metadata: {name: A}, spec: {containers: [{name: c, image: i}]}}]\n", `pod "A"`},
		{"an unknown priority class", "memory: 1Gi\npods: [{metadata: {name: a}, spec: {priorityClassName: high, containers: [{name: c, image: i}]}}]\n", `priority class "high" is not among priorityClasses`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "node.yaml")
			require.NoError(t, os.WriteFile(file, []byte(tc.yaml), 0o600))
			_, _, err := LoadScenario(file, static, node)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
