package chapters

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the sample outputs in the chapter READMEs from real runs")

// example is one command a chapter README tells the reader to run, and the output it shows.
// A command ending in " &" runs in the background, as in a shell: it has no output block, the
// commands after it run once it says it serves, and it gets Ctrl-C when the README is done.
type example struct {
	readme     string
	background bool
	command    string // as written: go run ./chapters/NN-name ARGS...
	expected   string
	start      int // byte offsets of the expected block's body in the README
	end        int
	chapter    string
	arguments  []string
}

var fence = regexp.MustCompile("(?ms)^```(sh|text)\n(.*?)^```\n")

// examples finds each ```sh block holding one `go run ./chapters/...` command and pairs it with
// the ```text block that follows it.
func examples(t *testing.T, readme string) []example {
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	var out []example
	var pending *example
	for _, m := range fence.FindAllSubmatchIndex(data, -1) {
		kind, body := string(data[m[2]:m[3]]), string(data[m[4]:m[5]])
		switch kind {
		case "sh":
			for _, line := range strings.Split(body, "\n") {
				if strings.HasPrefix(line, "go run ./chapters/") {
					require.Nil(t, pending, "%s: command %q has no ```text output block after it", readme, line)
					background := strings.HasSuffix(line, " &")
					fields := strings.Fields(strings.TrimSuffix(line, " &"))
					ex := &example{readme: readme, command: line, background: background, chapter: strings.TrimPrefix(fields[2], "./chapters/"), arguments: fields[3:]}
					if background {
						out = append(out, *ex)
					} else {
						pending = ex
					}
				}
			}
		case "text":
			if pending != nil {
				pending.expected, pending.start, pending.end = body, m[4], m[5]
				out = append(out, *pending)
				pending = nil
			}
		}
	}
	require.Nil(t, pending, "%s: the last command has no output block", readme)
	return out
}

// Normalization: what differs from run to run, or from machine to machine, is replaced by a
// placeholder in both the README and the real output before they are compared.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?m)^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ `), "$1 "},    // klog header
	{regexp.MustCompile(`(\d+\.\d+\.\d+\.\d+|localhost|\[::1\]):\d+`), "$1:PORT"},   // ports chosen at run time
	{regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/[\w.-]+`), "TMPDIR/TMP"}, // temporary files
	{regexp.MustCompile(`\[this host\].*`), "[this host]"},                          // machine-dependent
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "UID"},                                 // static pod UIDs hash the manifest's absolute path
	{regexp.MustCompile(`(?m)\b\d+(ms|s|m|h|d)$`), "AGE"},                           // ages at the end of table rows
	{regexp.MustCompile(`(?m)^\^C$`), ""},                                           // the terminal's echo of Ctrl-C
	{regexp.MustCompile(`[ \t]+`), " "},                                             // column widths follow the values
	{regexp.MustCompile(`(?m) +$`), ""},
}

func normalize(s string) string {
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return strings.TrimRight(s, "\n")
}

// build compiles each chapter once.
type builds struct {
	dir  string
	mu   sync.Mutex
	bins map[string]string
}

func (b *builds) binary(t *testing.T, chapter string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bin, ok := b.bins[chapter]; ok {
		return bin
	}
	bin := filepath.Join(b.dir, chapter)
	cmd := exec.Command("go", "build", "-o", bin, "./chapters/"+chapter)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./chapters/%s:\n%s", chapter, out)
	b.bins[chapter] = bin
	return bin
}

// run executes an example from the repository root. A command that says it serves until
// Ctrl-C gets SIGINT once it has said so, as a reader would press it.
func run(t *testing.T, bin string, ex example) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, ex.arguments...)
	cmd.Dir = ".."
	cmd.WaitDelay = 10 * time.Second // a descendant holding the output open cannot hang the test
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	interrupted := false
	for {
		select {
		case err := <-exited:
			return out.String(), err
		case <-tick.C:
			if !interrupted && strings.Contains(out.String(), "until Ctrl-C") {
				require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
				interrupted = true
			}
		}
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var removedDir = regexp.MustCompile(`removed (\S+)`)

// TestChapterREADMEs runs every `go run ./chapters/...` command of every chapter README, as
// built binaries from the repository root, and compares the output with the README's sample.
// `make update-golden` (go test -run TestChapterREADMEs ./chapters/ -update) rewrites the samples.
func TestChapterREADMEs(t *testing.T) {
	readmes, err := filepath.Glob("[0-9][0-9]-*/README.md")
	require.NoError(t, err)
	require.NotEmpty(t, readmes)
	b := &builds{dir: t.TempDir(), bins: map[string]string{}}

	netns := privateNetwork()
	for _, readme := range readmes {
		if strings.HasPrefix(readme, "07-") || strings.HasPrefix(readme, "08-") {
			if netns != nil {
				t.Logf("skipping %s: its examples run the mini-cluster in a private network namespace, and none can be made here (%v)", readme, netns)
				continue
			}
		}
		exs := examples(t, readme)
		require.NotEmpty(t, exs, "%s shows no command with its output", readme)
		var replacements []example
		var outputs []string
		var background []*exec.Cmd
		for _, ex := range exs {
			if ex.background {
				background = append(background, startBackground(t, b.binary(t, ex.chapter), ex))
				continue
			}
			t.Run(ex.command, func(t *testing.T) {
				require.DirExists(t, ex.chapter, "%s runs a chapter that does not exist", readme)
				got, err := run(t, b.binary(t, ex.chapter), ex)
				wantFailure := strings.Contains(ex.expected, `"command failed"`) || strings.HasPrefix(strings.TrimSpace(ex.expected), "error:")
				if wantFailure {
					assert.Error(t, err, "the README shows %q failing", ex.command)
				} else {
					assert.NoError(t, err, "%s:\n%s", ex.command, got)
				}
				for _, m := range removedDir.FindAllStringSubmatch(got, -1) {
					assert.NoDirExists(t, m[1], "the program said it removed %s", m[1])
				}
				if *update {
					replacements = append(replacements, ex)
					outputs = append(outputs, got)
					return
				}
				assert.Equal(t, normalize(ex.expected), normalize(got),
					"%s: the output of `%s` differs from the README (make update-golden rewrites it)", readme, ex.command)
			})
		}
		for _, cmd := range background {
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
		}
		if *update && len(replacements) > 0 {
			rewrite(t, readme, replacements, outputs)
		}
	}
}

// privateNetwork says whether chapter 07 can make its private network namespace here: `unshare`
// as minicluster.PrivateNetworkCommand runs it (this light package does not import minicluster).
func privateNetwork() error {
	args := []string{"--net", "true"}
	if os.Geteuid() != 0 {
		args = []string{"--map-root-user", "--net", "true"}
	}
	if out, err := exec.Command("unshare", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("unshare: %w: %s", err, out)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return err
	}
	return nil
}

// startBackground starts a README's background command and waits until it says it serves.
func startBackground(t *testing.T, bin string, ex example) *exec.Cmd {
	cmd := exec.Command(bin, ex.arguments...)
	cmd.Dir = ".."
	cmd.WaitDelay = 10 * time.Second
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "until Ctrl-C") },
		3*time.Minute, 100*time.Millisecond, "%s never said it serves:\n%s", ex.command, out.String())
	return cmd
}

// rewrite replaces the expected blocks of readme with real outputs, last block first so that
// earlier offsets stay valid.
func rewrite(t *testing.T, readme string, exs []example, outputs []string) {
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	for i := len(exs) - 1; i >= 0; i-- {
		body := outputs[i]
		if !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		data = append(data[:exs[i].start], append([]byte(body), data[exs[i].end:]...)...)
	}
	require.NoError(t, os.WriteFile(readme, data, 0o644))
	t.Logf("rewrote %d samples in %s", len(exs), readme)
}

// TestNormalize pins the normalization rules, since a rule too broad would hide real changes.
func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{`E1130 13:24:29.723421   21644 run.go:72] "command failed"`, `E run.go:72] "command failed"`},
		{"curl -s http://127.0.0.1:46025/pods", "curl -s http://127.0.0.1:PORT/pods"},
		{"removed " + os.TempDir() + "/hollow-kubelet.928208209", "removed TMPDIR/TMP"},
		{"node name: [this host] \"vm\"", "node name: [this host]"},
		{"kube-system   etcd-walkthrough   Running   12s", "kube-system etcd-walkthrough Running AGE"},
		{"^C", ""},
		{"ADD default/web-walkthrough uid b6f851ff054226b07e6088ba905d6e9b", "ADD default/web-walkthrough uid UID"},
		{"valid 20250 port", "valid 20250 port"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, normalize(tt.in), tt.in)
	}
}
