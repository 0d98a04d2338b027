package rehearsal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/workshop/checks"
)

// root is the repository's root.
var root = repo.Root()

// The files the rehearsal runs, and the sections of INSTRUCTOR.md it runs when.
const (
	instructor       = "examples/workshop/INSTRUCTOR.md"
	workshopReadme   = "examples/workshop/README.md"
	beforeTheDay     = "Before the day"
	cleanSlate       = "Resetting between exercises (or between groups)"
	afterTheWorkshop = "After the workshop"
)

func exerciseReadme(e checks.Exercise) string { return "examples/workshop/" + e.Name + "/README.md" }

// allFiles are the Markdown files whose blocks the rehearsal runs.
func allFiles() []string {
	files := []string{instructor, workshopReadme}
	for _, e := range checks.Exercises {
		files = append(files, exerciseReadme(e))
	}
	return files
}

func TestReadBlocks(t *testing.T) {
	dir := t.TempDir()
	md := "# T\n\n## Steps\n\n```console\n$ kubectl get pods -w\nNAME  READY\nweb   1/1\n$ minikube ssh -- \\\n  sudo ls\n```\n\n```text\n$ not a command\n```\n\n" +
		"1. List:\n\n   ```sh\n   go run ./x\n\n   make check EX=1\n   ```\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte(md), 0o644))
	blocks, err := ReadBlocks(dir, "a.md")
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	assert.Equal(t, Block{File: "a.md", Heading: "Steps", Line: 5, Commands: []Command{
		{Text: "kubectl get pods -w", Line: 6, Sample: []string{"NAME  READY", "web   1/1"}},
		{Text: "minikube ssh -- \\\n  sudo ls", Line: 9},
	}}, blocks[0])
	assert.Equal(t, []Command{{Text: "go run ./x", Line: 20}, {Text: "make check EX=1", Line: 22}}, blocks[1].Commands)

	for name, bad := range map[string]string{
		"comment":   "```sh\n# set up\nmake\n```\n",
		"unclosed":  "```console\n$ ls\n",
		"no prompt": "```console\nls\n```\n",
		"empty":     "```sh\n\n```\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".md"), []byte(bad), 0o644))
		_, err := ReadBlocks(dir, name+".md")
		assert.Error(t, err, name)
	}
}

func TestIsWatch(t *testing.T) {
	for text, want := range map[string]bool{
		"kubectl get pods -w":                                                           true,
		"kubectl get csr --watch":                                                       true,
		"kubectl -n kubelet-reader logs ds/kubelet-reader -f":                           true,
		"minikube ssh -- 'sudo journalctl -u kubelet -f | grep x'":                      true,
		"minikube ssh -- sudo journalctl -u kubelet --no-pager":                         false,
		"kubectl apply -f examples/rbac/":                                               false,
		"kubectl delete -f examples/rbac/ -f examples/rbac/node-proxy/":                 false,
		"minikube ssh -- 'sudo crictl logs $(sudo crictl ps -q)'":                       false,
		`minikube ssh -- 'sudo curl -sS -w "%{http_code}" https://minikube:10250/pods'`: false,
		"kubectl -n kube-system get pod kube-apiserver-minikube -w":                     true,
		"minikube ssh -- sudo journalctl -u kubelet -f":                                 true,
		"minikube ssh -- 'sudo journalctl -u kubelet -n 5 | grep -f x'":                 false,
	} {
		assert.Equal(t, want, IsWatch(text), text)
	}
}

func TestMatch(t *testing.T) {
	out := "\x1b[0;1;39mNAME                    READY   STATUS\x1b[0m\r\nworkshop-pod-minikube   0/1     ContainerCreating\r\nworkshop-pod-minikube   1/1     Running\r\n"
	tests := []struct {
		name   string
		sample []string
		failed bool
		want   string
	}{
		{"columns of any width, in order", []string{"NAME READY STATUS", "workshop-pod-minikube 1/1 Running"}, false, ""},
		{"… for what varies", []string{"workshop-… 1/1 …"}, false, ""},
		{"… for nothing, after a trimmed space", []string{"NAME READY STATUS …"}, false, ""},
		{"a lone … and blank lines are free", []string{"…", "", "workshop-pod-minikube 1/1 Running"}, false, ""},
		{"order matters", []string{"workshop-pod-minikube 1/1 Running", "NAME READY STATUS"}, false, "NAME READY STATUS"},
		{"whole lines", []string{"READY"}, false, "READY"},
		{"not there", []string{"workshop-pod-minikube 1/1 Terminating"}, false, "workshop-pod-minikube 1/1 Terminating"},
		{"a failure line is not required of a success", []string{"NAME …", "ssh: Process exited with status 3"}, false, ""},
		{"but of a failure", []string{"NAME …", "ssh: Process exited with status 3"}, true, "ssh: Process exited with status 3"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Match(tt.sample, out, tt.failed), tt.name)
	}
	assert.Equal(t, []string{"b", "done"}, Lines("a\rb\r\ndone\n"), "a line rewritten in place shows its last text")
	assert.Equal(t, []string{"     Loaded: loaded (/lib/systemd/system/kubelet.service; disabled; preset: enabled)"},
		Lines("     Loaded: loaded (\x1b]8;;file://minikube/lib/systemd/system/kubelet.service\x1b\\/lib/systemd/system/kubelet.service\x1b]8;;\x1b\\; \x1b[0;1;38;5;185mdisabled\x1b[0m; preset: \x1b[0;1;32menabled\x1b[0m)\r\n"),
		"systemd's hyperlinks (OSC 8, ended by ST) and colors show as their text")
}

func TestMayFail(t *testing.T) {
	assert.True(t, Command{Sample: []string{"…", "error: forbidden"}}.MayFail())
	assert.True(t, Command{Sample: []string{"make: *** [Makefile:59: check] Error 1"}}.MayFail())
	assert.False(t, Command{Sample: []string{"Exercise 1 — …: PASS"}}.MayFail())
	assert.True(t, Command{Sample: []string{"error: …nodes/proxy…", "…", "exit status 1"}}.MustFail(), "nothing but the failure")
	assert.False(t, Command{Sample: []string{"● kubelet.service", "…", "ssh: Process exited with status 3"}}.MustFail(), "a report that may or may not end in failure")
}

// Every command of every file the rehearsal runs reads the same in bash and in zsh, both as
// interactive shells (as an attendee types them): the rehearsal runs them with bash, and macOS's
// shell is zsh. Neither shell runs anything here: with no PATH, every command is "not found", and
// a handler writes down the words it would have run with; the two lists must be equal. That
// catches what differs between them in how a line is read — zsh refusing an unquoted glob that
// matches nothing ("no matches found"), a "#" that interactive zsh passes as a word, history
// expansion, word splitting — but not what a command does.
func TestCommandsReadAlikeInBashAndZsh(t *testing.T) {
	shells := map[string]string{}
	for _, sh := range []string{"bash", "zsh"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			tier.Unavailable(t, "rehearsal", fmt.Errorf("%s is not installed (Debian: apt-get install %s)", sh, sh))
			return
		}
		shells[sh] = path
	}
	for _, file := range allFiles() {
		blocks, err := ReadBlocks(root, file)
		require.NoError(t, err)
		for _, b := range blocks {
			for _, c := range b.Commands {
				bash := trace(t, shells["bash"], c.Text, "bash --noprofile --norc -i", "command_not_found_handle")
				zsh := trace(t, shells["zsh"], c.Text, "zsh -f -i", "command_not_found_handler")
				assert.Equal(t, bash.words, zsh.words, "%s:%d: bash and zsh read this command differently:\n  %s\nzsh said: %s", file, c.Line, c.Text, zsh.stderr)
				assert.NotEmpty(t, bash.words, "%s:%d: the shell ran nothing of: %s (bash said: %s)", file, c.Line, c.Text, bash.stderr)
			}
		}
	}
}

type traced struct {
	words  []string
	stderr string
}

// trace has an interactive shell read one command line, with every command "not found" and
// recorded, and returns what each would have been run with (sorted: a pipeline's commands start
// in any order).
func trace(t *testing.T, shell, text, invocation, handler string) traced {
	dir := t.TempDir()
	// Directories the commands redirect into exist, as in the repository.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "examples", "workshop", "answers"), 0o755))
	log := filepath.Join(dir, "trace")
	// One write per record: the commands of a pipeline run at once.
	script := fmt.Sprintf("PS1= PS2= PROMPT= PATH=%s\n%s() { r=$(printf '%%s\\001' \"$@\"); printf '%%s\\n' \"$r\" >> %s; return 0; }\n%s\nexit\n",
		filepath.Join(dir, "nothing"), handler, log, text)
	// A command run by its path (exercise 16's .bin/dlv, which make dlv builds) is not "not
	// found": a stand-in at that path records its words, as the handler does.
	if first := strings.Fields(text)[0]; strings.Contains(first, "/") && !filepath.IsAbs(first) {
		stub := filepath.Join(dir, first)
		require.NoError(t, os.MkdirAll(filepath.Dir(stub), 0o755))
		require.NoError(t, os.WriteFile(stub, []byte(fmt.Sprintf("#!/bin/sh\nr=$(printf '%%s\\001' \"$0\" \"$@\"); printf '%%s\\n' \"$r\" >> %s\n", log)), 0o755))
	}
	args := strings.Fields(invocation)
	cmd := exec.Command(shell, args[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "TERM=dumb", "LANG=C.UTF-8"}
	cmd.Stdin = strings.NewReader(script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	_ = cmd.Run() // the exit status is the last command's, any
	data, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var words []string
	for _, rec := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if rec != "" {
			words = append(words, strconv.Quote(strings.TrimSuffix(rec, "\x01")))
		}
	}
	slices.Sort(words)
	return traced{words: words, stderr: strings.TrimSpace(regexp.MustCompile(`(?m)^.*(cannot set terminal process group|no job control).*$\n?`).ReplaceAllString(stderr.String(), ""))}
}

// The files hold what the rehearsal expects: INSTRUCTOR.md's sections, and every exercise
// checked by a `make check EX=N` whose sample says PASS.
func TestFilesHaveWhatTheRehearsalRuns(t *testing.T) {
	blocks, err := ReadBlocks(root, instructor)
	require.NoError(t, err)
	for _, b := range blocks {
		assert.Contains(t, []string{beforeTheDay, cleanSlate, afterTheWorkshop}, b.Heading, "%s:%d: a block under a section the rehearsal does not know", instructor, b.Line)
	}
	for _, e := range checks.Exercises {
		blocks, err := ReadBlocks(root, exerciseReadme(e))
		require.NoError(t, err)
		c, ok := checkCommand(blocks, e.Number)
		if assert.True(t, ok, "%s has no `make check EX=%d`", exerciseReadme(e), e.Number) {
			assert.Equal(t, []string{fmt.Sprintf("Exercise %d — %s: PASS", e.Number, e.Title)}, c.Sample, "%s:%d", exerciseReadme(e), c.Line)
		}
	}
}

// checkCommand finds the exercise's own `make check EX=N`.
func checkCommand(blocks []Block, n int) (Command, bool) {
	for _, b := range blocks {
		for _, c := range b.Commands {
			if c.Text == fmt.Sprintf("make check EX=%d", n) {
				return c, true
			}
		}
	}
	return Command{}, false
}

// timing is one row of INSTRUCTOR.md's timing table.
type timing struct {
	number   int
	low, top int // the rehearsed range, in seconds
}

var timingRow = regexp.MustCompile(`^\| (\d+) \| ([^|]+) \| (\d+) \| (\d+)–(\d+) s \| [^|]* \|$`)

// timings reads INSTRUCTOR.md's table: a row per exercise, in order, each with its rehearsed range.
func timings(t *testing.T) []timing {
	data, err := os.ReadFile(filepath.Join(root, instructor))
	require.NoError(t, err)
	var out []timing
	for _, line := range strings.Split(string(data), "\n") {
		if m := timingRow.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			low, _ := strconv.Atoi(m[4])
			top, _ := strconv.Atoi(m[5])
			out = append(out, timing{n, low, top})
		}
	}
	return out
}

func TestInstructorTimingTable(t *testing.T) {
	rows := timings(t)
	require.Len(t, rows, len(checks.Exercises), "INSTRUCTOR.md's timing table has a row per exercise, with its rehearsed range (`N–M s`)")
	for i, e := range checks.Exercises {
		assert.Equal(t, e.Number, rows[i].number, "row %d", i+1)
		assert.Less(t, rows[i].low, rows[i].top, "exercise %d: a range", e.Number)
	}
	// The workshop's own table links every exercise, in order, by its title.
	data, err := os.ReadFile(filepath.Join(root, workshopReadme))
	require.NoError(t, err)
	for _, e := range checks.Exercises {
		title := strings.ReplaceAll(e.Title, "/pods?namespace=", "`/pods?namespace=`")
		assert.Contains(t, string(data), fmt.Sprintf("| %d | [%s](%s/README.md) |", e.Number, title, e.Name))
	}
}

// The comparison catches what it is for.
func TestTraceCatchesWhatDiffers(t *testing.T) {
	bash, bashErr := exec.LookPath("bash")
	zsh, zshErr := exec.LookPath("zsh")
	if bashErr != nil || zshErr != nil {
		tier.Unavailable(t, "rehearsal", fmt.Errorf("bash and zsh are needed: %v %v", bashErr, zshErr))
		return
	}
	for _, bad := range []string{
		"kubectl get pods -o jsonpath={.items[*].metadata.name}",    // zsh: no matches found
		"make check EX=1   # or go run ./examples/workshop/check 1", // interactive zsh: "#" is a word
		`x="csr-a csr-b"; kubectl certificate approve $x`,           // zsh does not split $x
	} {
		b := trace(t, bash, bad, "bash --noprofile --norc -i", "command_not_found_handle")
		z := trace(t, zsh, bad, "zsh -f -i", "command_not_found_handler")
		assert.NotEqual(t, b.words, z.words, bad)
	}
	good := `minikube ssh -- 'sudo curl -H "Authorization: Bearer $(cat token)" https://minikube:10250/pods'`
	assert.Equal(t, trace(t, bash, good, "bash --noprofile --norc -i", "command_not_found_handle").words,
		trace(t, zsh, good, "zsh -f -i", "command_not_found_handler").words)
}

// minikubeStart is a `minikube start` command, and what every one must name: minikube chooses
// Docker with cri-dockerd when no runtime is named, and the workshop (and the lab it is
// rehearsed in) uses containerd; and --force, without which an offline or rate-limited room
// cannot start v1.37.2 (INSTRUCTOR.md's decision).
var minikubeStart = regexp.MustCompile(`(^|[;&|]\s*)minikube start\b`)

// TestCommandsAreWhatAttendeesCanType: no command types the node's address (minikube chooses it:
// 192.168.49.2 only when that network is free; `minikube ip` says which), and every `minikube
// start` names its driver and its runtime, and carries --force.
func TestCommandsAreWhatAttendeesCanType(t *testing.T) {
	address := regexp.MustCompile(`\b192\.168\.\d+\.\d+\b`)
	starts := 0
	for _, file := range allFiles() {
		blocks, err := ReadBlocks(root, file)
		require.NoError(t, err)
		for _, b := range blocks {
			for _, c := range b.Commands {
				where := fmt.Sprintf("%s:%d", file, c.Line)
				assert.NotRegexp(t, address, c.Text, "%s types the node's address: use $(minikube ip)", where)
				if minikubeStart.MatchString(c.Text) {
					starts++
					assert.Contains(t, c.Text, "--driver=docker", "%s: minikube start names its driver", where)
					assert.Contains(t, c.Text, "--container-runtime=containerd", "%s: minikube start names its runtime (its default is Docker with cri-dockerd)", where)
					assert.Regexp(t, `(^|\s)--force(\s|$)`, c.Text, "%s: minikube start carries --force (v1.37.2 is newer than minikube v1.38.1 knows: offline or rate-limited, GitHub's answer never comes; INSTRUCTOR.md)", where)
				}
			}
		}
	}
	assert.Positive(t, starts, "the workshop starts minikube somewhere")
}
