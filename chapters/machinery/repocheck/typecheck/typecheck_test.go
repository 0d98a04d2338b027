package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Linux-only identifier passes for Linux and fails for macOS and Windows, each error named with
// its platform; a file that only one platform builds is checked only there.
func TestTypecheckFindsWhatOnePlatformLacks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	write("go.mod", "module probe\n\ngo 1.26\n")
	write("main.go", "package main\n\nfunc main() {}\n")
	write("unshare.go", "package main\n\nimport \"syscall\"\n\nvar _ = syscall.SYS_UNSHARE\n")
	write("job_windows.go", "package main\n\nvar _ int = \"a job object\"\n")

	tests := []struct {
		platform string
		errors   []string
	}{
		{"linux/amd64", nil},
		{"darwin/arm64", []string{"darwin/arm64: " + filepath.Join(dir, "unshare.go") + ":5:17: undefined: syscall.SYS_UNSHARE"}},
		{"windows/amd64", []string{
			"windows/amd64: " + filepath.Join(dir, "job_windows.go") + ":3:13: cannot use \"a job object\" (untyped string constant) as int value in variable declaration",
			"windows/amd64: " + filepath.Join(dir, "unshare.go") + ":5:17: undefined: syscall.SYS_UNSHARE",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.platform, func(t *testing.T) {
			var out bytes.Buffer
			o := &options{platforms: []string{tt.platform}, dir: dir, out: &out}
			require.NoError(t, o.validate())
			err := o.run(context.Background(), []string{"."})
			var got []string
			for _, line := range bytes.Split(out.Bytes(), []byte("\n")) {
				if bytes.HasPrefix(line, []byte(tt.platform+": ")) {
					got = append(got, string(line))
				}
			}
			assert.ElementsMatch(t, tt.errors, got, out.String())
			if tt.errors == nil {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, fmt.Sprintf("%d errors", len(tt.errors)))
			}
		})
	}
}

func TestTypecheckValidate(t *testing.T) {
	for _, p := range [][]string{nil, {"darwin"}, {"/arm64"}, {"darwin/"}} {
		assert.Error(t, (&options{platforms: p}).validate(), "%q", p)
	}
	assert.NoError(t, (&options{platforms: []string{"darwin/arm64", "windows/amd64"}}).validate())
}
