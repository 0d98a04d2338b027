package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

// Every flag is checked before either kubelet starts, with one line naming the flag and the value.
func TestValidate(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "kubelet.log")
	assert.NoError(t, os.WriteFile(existing, []byte("mine\n"), 0o644))
	good := bootstrapOptions{nodeName: "walkthrough", wait: 30 * time.Second}
	tests := []validtable.Case[bootstrapOptions]{
		{Name: "the defaults", Change: func(*bootstrapOptions) {}},
		{Name: "a log to stderr", Change: func(o *bootstrapOptions) { o.kubeletLog = "-" }},
		{Name: "an upper-case node name", Change: func(o *bootstrapOptions) { o.nodeName = "Walkthrough" }, WantErr: `--node-name "Walkthrough": a lowercase RFC 1123 subdomain`},
		{Name: "a node name too long for its pods", Change: func(o *bootstrapOptions) { o.nodeName = strings.Repeat("a", 254) }, WantErr: `--node-name`},
		{Name: "a wait of 0", Change: func(o *bootstrapOptions) { o.wait = 0 }, WantErr: "--wait 0s: must be more than 0"},
		{Name: "a negative wait", Change: func(o *bootstrapOptions) { o.wait = -time.Minute }, WantErr: "--wait -1m0s: must be more than 0"},
		{Name: "a log file that exists", Change: func(o *bootstrapOptions) { o.kubeletLog = existing }, WantErr: "--kubelet-log " + existing + ": the file exists; name a new one (it is never overwritten)"},
		{Name: "a port out of range", Change: func(o *bootstrapOptions) { o.toyReadOnlyPort = 70000 }, WantErr: "--toy-read-only-port 70000: a port is 0 (pick a free one) or 1 to 65535"},
		{Name: "one port for both", Change: func(o *bootstrapOptions) { o.readOnlyPort, o.toyReadOnlyPort = 10301, 10301 }, WantErr: "--read-only-port 10301 and --toy-read-only-port 10301: each kubelet needs a port of its own"},
	}
	validtable.Run(t, func() *bootstrapOptions { o := good; return &o }, (*bootstrapOptions).validate, tests)
}
