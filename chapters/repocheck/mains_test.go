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

// mainShape is the one shape of every command's main: build the command, run it, exit with its
// code — cli.Run for the chapters that report errors as the kubelet's own main does (a klog
// "command failed" line), program.Run for those that print "error: …" as kubectl does.
var mainShape = regexp.MustCompile(`(?m)^func main\(\) \{\n\tcommand := [\w.]+\(context\.Background\(\)\)\n\tcode := (cli|program)\.Run\(command\)\n\tos\.Exit\(code\)\n\}\n`)

// TestMainShape holds every cobra command's main to that shape.
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
		if !strings.Contains(string(data), "github.com/spf13/cobra") && !strings.Contains(string(data), "Command(context.Background())") {
			continue // not a cobra command (the runc shim is runc's arguments in, runc out)
		}
		mains++
		assert.Regexp(t, mainShape, string(data), "%s: main is `command := NewXCommand(ctx)`, `code := program.Run(command)` (or cli.Run), `os.Exit(code)`", path)
	}
	assert.Greater(t, mains, 10)
}
