package repocheck

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mainShape is the one shape of every command's main: build the command, run it with the one
// runner, program.Run (errors as "error: …", as kubectl prints them), exit with its code.
var mainShape = regexp.MustCompile(`(?m)^func main\(\) \{\n\tcommand := [\w.]+\((context\.Background\(\))?\)\n\tcode := program\.Run\(command\)\n\tos\.Exit\(code\)\n\}\n`)

// kubeletMain is the one exception: chapter 12's chain is the kubelet binary's own main
// (cmd/kubelet/kubelet.go), whose runner is component-base's cli.Run.
const kubeletMain = "chapters/12-debugger/chain/main.go"

// TestMainShape holds every cobra command's main to that shape (a command that needs no context,
// as benchsummary's, is built without one).
func TestMainShape(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.Dir}}/{{range .GoFiles}}{{if eq . "main.go"}}main.go{{end}}{{end}}{{end}}`, "../...").Output()
	require.NoError(t, err)
	mains := 0
	for _, path := range strings.Fields(string(out)) {
		if !strings.HasSuffix(path, "/main.go") {
			continue
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		if !strings.Contains(string(data), "github.com/spf13/cobra") && !strings.Contains(string(data), "program.Run") && !strings.Contains(string(data), "cli.Run") {
			continue // not a cobra command (the runc shim is runc's arguments in, runc out)
		}
		mains++
		if strings.HasSuffix(path, kubeletMain) {
			assert.Contains(t, string(data), "\tcode := cli.Run(command)\n", "%s runs as the kubelet's main does", path)
			continue
		}
		assert.Regexp(t, mainShape, string(data), "%s: main is `command := NewXCommand(ctx)`, `code := program.Run(command)`, `os.Exit(code)`", path)
	}
	assert.Greater(t, mains, 10)
}
