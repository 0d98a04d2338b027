package main

import (
	"testing"
	"time"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/validtable"
)

// Every flag is checked before either kubelet starts, with one line naming the flag and the value.
// The flags it shares with chapter 04 are program.KubeletFlags, whose tests hold their errors;
// here, that they are checked, and the toy kubelet's port.
func TestValidate(t *testing.T) {
	good := bootstrapOptions{KubeletFlags: program.KubeletFlags{NodeName: "walkthrough", Wait: 30 * time.Second}}
	tests := []validtable.Case[bootstrapOptions]{
		{Name: "the defaults", Change: func(*bootstrapOptions) {}},
		{Name: "a wait of 0", Change: func(o *bootstrapOptions) { o.Wait = 0 }, WantErr: "--wait 0s: must be more than 0"},
		{Name: "a port out of range", Change: func(o *bootstrapOptions) { o.toyReadOnlyPort = 70000 }, WantErr: "--toy-read-only-port 70000: a port is 0 (pick a free one) or 1 to 65535"},
		{Name: "one port for both", Change: func(o *bootstrapOptions) { o.ReadOnlyPort, o.toyReadOnlyPort = 10301, 10301 }, WantErr: "--read-only-port 10301 and --toy-read-only-port 10301: each kubelet needs a port of its own"},
	}
	validtable.Run(t, func() *bootstrapOptions { o := good; return &o }, (*bootstrapOptions).validate, tests)
}
