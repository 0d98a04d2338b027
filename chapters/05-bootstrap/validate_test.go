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
		{"the defaults", func(*bootstrapOptions) {}, ""},
		{"a log to stderr", func(o *bootstrapOptions) { o.kubeletLog = "-" }, ""},
		{"an upper-case node name", func(o *bootstrapOptions) { o.nodeName = "Walkthrough" }, `--node-name "Walkthrough": a lowercase RFC 1123 subdomain`},
		{"a node name too long for its pods", func(o *bootstrapOptions) { o.nodeName = strings.Repeat("a", 254) }, `--node-name`},
		{"a wait of 0", func(o *bootstrapOptions) { o.wait = 0 }, "--wait 0s: must be more than 0"},
		{"a negative wait", func(o *bootstrapOptions) { o.wait = -time.Minute }, "--wait -1m0s: must be more than 0"},
		{"a log file that exists", func(o *bootstrapOptions) { o.kubeletLog = existing }, "--kubelet-log " + existing + ": the file exists; name a new one (it is never overwritten)"},
	}
	validtable.Run(t, func() *bootstrapOptions { o := good; return &o }, (*bootstrapOptions).validate, tests)
}
