package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

// Every flag is checked before anything starts, with one line naming the flag and the value.
func TestValidate(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	require.NoError(t, os.WriteFile(existing, []byte("mine: my notes\n"), 0o644))
	// A kubeconfig with the cluster's names: package kubeconfig's tests check the rest of --kubeconfig.
	withOurs := filepath.Join(dir, "with-ours")
	require.NoError(t, os.WriteFile(withOurs, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: walkthrough\n  cluster: {server: https://192.0.2.9:6443}\n"), 0o600))

	tests := []validtable.Case[clusterOptions]{
		{Name: "the defaults", Change: func(*clusterOptions) {}},
		{Name: "three nodes", Change: func(o *clusterOptions) { o.nodes, o.nodesSet = 3, true }},
		{Name: "named nodes", Change: func(o *clusterOptions) { o.nodeNames = []string{"a", "b"} }},
		{Name: "a new kubeconfig", Change: func(o *clusterOptions) { o.kubeconfig = filepath.Join(dir, "new") }},
		{Name: "no nodes", Change: func(o *clusterOptions) { o.nodes = 0 }, WantErr: "--nodes 0: 1 to 10 (each node is a whole kubelet in this process)"},
		{Name: "negative nodes", Change: func(o *clusterOptions) { o.nodes = -2 }, WantErr: "--nodes -2: 1 to 10"},
		{Name: "a thousand nodes", Change: func(o *clusterOptions) { o.nodes = 1000 }, WantErr: "--nodes 1000: 1 to 10"},
		{Name: "--nodes and --node-names disagree", Change: func(o *clusterOptions) { o.nodes, o.nodesSet, o.nodeNames = 3, true, []string{"a", "b"} }, WantErr: "--nodes 3 and --node-names a,b (2 names): give one of them"},
		{Name: "a duplicate name", Change: func(o *clusterOptions) { o.nodeNames = []string{"a", "b", "a"} }, WantErr: `--node-names a,b,a: "a" twice`},
		{Name: "an upper-case name", Change: func(o *clusterOptions) { o.nodeNames = []string{"Node1"} }, WantErr: `--node-names "Node1": a lowercase RFC 1123 subdomain`},
		{Name: "an empty name", Change: func(o *clusterOptions) { o.nodeNames = []string{"a", ""} }, WantErr: `--node-names "": must not be empty`},
		{Name: "too many names", Change: func(o *clusterOptions) { o.nodeNames = strings.Split("a,b,c,d,e,f,g,h,i,j,k", ",") }, WantErr: "--node-names a,b,c,d,e,f,g,h,i,j,k: at most 10 nodes"},
		{Name: "a node IP that is no IP", Change: func(o *clusterOptions) { o.nodeIP = "node1" }, WantErr: `--node-ip "node1": not an IP address`},
		{Name: "a loopback node IP", Change: func(o *clusterOptions) { o.nodeIP = "127.0.0.1" }, WantErr: "--node-ip 127.0.0.1: the kubelet refuses loopback"},
		{Name: "a node IP not of this machine", Change: func(o *clusterOptions) { o.nodeIP = "192.0.2.1" }, WantErr: "--node-ip 192.0.2.1: not an address of this machine (the kubelet checks its interfaces)"},
		{Name: "a YAML file that is no kubeconfig", Change: func(o *clusterOptions) { o.kubeconfig = existing }, WantErr: "--kubeconfig " + existing + ": not a kubeconfig (no kind: Config), so nothing is merged into it"},
		{Name: "a kubeconfig with our names", Change: func(o *clusterOptions) { o.kubeconfig = withOurs }, WantErr: "--kubeconfig " + withOurs + `: it has a cluster "walkthrough" already (another mini-cluster's?)`},
		{Name: "a log that exists", Change: func(o *clusterOptions) { o.kubeletLog = existing }, WantErr: "--log " + existing + ": the file exists; name a new one (it is never overwritten)"},
		{Name: "a new Pods API link", Change: func(o *clusterOptions) { o.podsAPILink = filepath.Join(dir, "pods-api.sock") }},
		{Name: "a Pods API link where a file is", Change: func(o *clusterOptions) { o.podsAPILink = existing }, WantErr: "--pods-api-link " + existing + ": the file exists; name a new one (it is never overwritten)"},
		{Name: "an apiserver port out of range", Change: func(o *clusterOptions) { o.apiserverPort = 70000 }, WantErr: "--apiserver-port 70000: a port is 0 (pick a free one) or 1 to 65535"},
		{Name: "an apiserver port with a node IP", Change: func(o *clusterOptions) { o.nodeIP, o.apiserverPort = "192.0.2.1", 6443 }, WantErr: "--apiserver-port 6443: only in the private network namespace (with --node-ip, kubectl reaches the apiserver at the node IP)"},
	}
	validtable.Run(t, func() *clusterOptions { return &clusterOptions{nodes: 1} }, (*clusterOptions).validate, tests)
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "mine: my notes\n", string(data), "validate only reads")
}

// --pods-api-link: a link to the kubelet's socket under its root directory, removed by what
// linkPodsAPI returns — unless it is no longer that link.
func TestLinkPodsAPI(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "pods-api.sock")
	unlink, err := linkPodsAPI("/root-dir", link)
	require.NoError(t, err)
	target, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, "/root-dir/pods-api/pods-api.sock", target)
	unlink()
	assert.NoFileExists(t, link)

	unlink, err = linkPodsAPI("/root-dir", link)
	require.NoError(t, err)
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("/elsewhere", link)) // the reader's own now
	unlink()
	target, err = os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, "/elsewhere", target, "a link that is no longer ours stays")

	_, err = linkPodsAPI("/root-dir", link)
	assert.ErrorContains(t, err, "--pods-api-link: ")
}
