package toykubelet

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
)

// The toy's servers listen only where they should: no secure port without TLS and
// authentication, and a port asked for must be free (else another program would answer at the
// toy's URL while its server failed in a goroutine).
func TestStartListeners(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	busy := l.Addr().(*net.TCPAddr).Port
	inUse := "the toy kubelet's port: listen tcp 127.0.0.1:" + strconv.Itoa(busy) + ": bind: address already in use"
	tests := []struct {
		name       string
		opts       StartOptions
		wantErr    string
		wantSecure bool
	}{
		{name: "zero value: read-only port only", opts: StartOptions{}},
		{name: "a secure port without TLS and Auth", opts: StartOptions{SecurePort: busy},
			wantErr: "secure port " + strconv.Itoa(busy) + ": the toy kubelet serves it only with TLSConfig and Auth"},
		{name: "read-only port in use", opts: StartOptions{ReadOnlyPort: busy}, wantErr: inUse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.NodeName, tt.opts.StaticPodPath = "node", t.TempDir()
			r, err := Start(context.Background(), tt.opts)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			t.Cleanup(r.Stop)
			assert.NotEmpty(t, r.ReadOnlyURL)
			assert.Empty(t, r.SecureURL, "no secure port without TLS and authentication")
		})
	}
}

// Should the real kubelet beside it end the process (chapter 05 runs both), the toy's root
// directory goes too. Played in a process of its own, the test binary again.
func TestLastWordsRemoveTheRoot(t *testing.T) {
	if os.Getenv("TOYKUBELET_LAST_WORDS") != "" {
		r, err := Start(context.Background(), StartOptions{NodeName: "node", StaticPodPath: os.Getenv("TOYKUBELET_LAST_WORDS")})
		require.NoError(t, err)
		fmt.Println(r.RootDir)
		kubeletlog.LastWords("error: the kubelet ended this program")
		return
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLastWordsRemoveTheRoot$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TOYKUBELET_LAST_WORDS="+t.TempDir(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s%s", &stdout, &stderr)
	assert.Contains(t, stderr.String(), "error: the kubelet ended this program\n")
	assert.Contains(t, stdout.String(), tmp+"/toy-kubelet-")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left)
}
