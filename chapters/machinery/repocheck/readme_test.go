package repocheck

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/labtest"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/journeynote"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/syncbuf"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

var update = flag.Bool("update", false, "rewrite the sample outputs in the chapter READMEs from real runs")

// noNetns says why no private network namespace could be made; nil when the tests run in one.
var noNetns error

// TestMain runs the README commands inside a private network namespace when one can be made:
// there, nothing else listens (the README's "nothing on 10255" is true whatever this machine
// runs) and every packet stays on a network the test made. The modules are downloaded first,
// outside, since the namespace has no route to the module proxy.
//
// The checks of this package read the repository from the chapters directory, as they were
// written: its chapters as NN-name, the repository's root as "..". go test starts them in their
// own directory, chapters/machinery/repocheck.
func TestMain(m *testing.M) {
	if wd, err := os.Getwd(); err == nil && filepath.Base(wd) == "repocheck" {
		if err := os.Chdir(filepath.Join("..", "..")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if _, inside := netns.Inside(); !inside {
		// The repository's module, and Delve's (chapter 13 builds Delve from it).
		for _, dir := range []string{"..", "machinery/support/delve"} {
			download := exec.Command("go", "mod", "download")
			download.Dir = dir
			if out, err := download.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go mod download in %s: %v\n%s", dir, err, out)
				os.Exit(1)
			}
		}
	}
	if ran, code, err := netns.RunInside(); ran {
		os.Exit(code)
	} else if err != nil {
		noNetns = err
	}
	os.Exit(m.Run())
}

// failureLine is how every chapter reports the error it stops on (program.Run): a sample that
// shows one, first line or last, is of a command that fails.
var failureLine = regexp.MustCompile(`(?m)^error: `)

// example is one command a chapter README tells the reader to run, and the output it shows.
// A command ending in " &" runs in the background, as in a shell: it has no output block, the
// commands after it run once it says it serves, and it gets Ctrl-C when the README is done.
type example struct {
	readme     string
	background bool
	// setup is a shell line that prepares files in /tmp for the commands after it (mkdir, cp,
	// sed into /tmp): run as written, with the test's own /tmp, and it must succeed.
	setup     bool
	command   string // as written: go run ./chapters/NN-name ARGS..., go run ./examples/NAME ARGS..., or minikube ARGS...
	program   string // what a `go run` builds, from the repository's root (chapters/NN-name); "" for minikube
	arguments []string
	samples   []sample
}

// inLab says whether the example is a command of minikube's: a README that has one runs all its
// commands in a lab (chapters/machinery/lab: real minikube on a real Docker engine), as on a reader's
// laptop with minikube.
func (ex example) inLab() bool { return ex.program == "" && !ex.setup }

// sample is an output block. Most are for every host; a block whose fence says ```text cgroup-v1
// or ```text cgroup-v2 shows what a host of that kind prints, and is compared on such hosts only
// (CI runs the README tests on both). A block whose fence says ```text journey is chapter 07's
// journey, compared as what the note teaches (compareJourney), not line by line.
type sample struct {
	host       string
	journey    bool
	expected   string
	start, end int // byte offsets of the block's body in the README
}

var fence = regexp.MustCompile("(?ms)^```(sh|text)(?: ([\\w-]+))?\n(.*?)^```\n")

// hostKinds are the fence tags a sample may carry.
var hostKinds = map[string]bool{"cgroup-v1": true, "cgroup-v2": true}

// setupLine is a shell line that writes only under /tmp: mkdir -p /tmp/…, cp … /tmp/…, sed … > /tmp/….
var setupLine = regexp.MustCompile(`^(mkdir -p /tmp/\S+|cp \S+ /tmp/\S+|sed '[^']*' \S+ > /tmp/\S+)( && (mkdir -p /tmp/\S+|cp \S+ /tmp/\S+))*$`)

// examples finds each ```sh block line holding a `go run ./chapters/...`, a `go run
// ./examples/...` or a `minikube …` command and pairs it with the ```text blocks that follow it, up to the next command.
func examples(t *testing.T, readme string) []example {
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	var out []example
	var pending *example
	flush := func() {
		if pending != nil {
			require.NotEmpty(t, pending.samples, "%s: command %q has no ```text output block after it", readme, pending.command)
			out = append(out, *pending)
			pending = nil
		}
	}
	for _, m := range fence.FindAllSubmatchIndex(data, -1) {
		kind, body := string(data[m[2]:m[3]]), string(data[m[6]:m[7]])
		tag := ""
		if m[4] >= 0 {
			tag = string(data[m[4]:m[5]])
		}
		switch kind {
		case "sh":
			for _, line := range strings.Split(body, "\n") {
				var program string
				var arguments []string
				background := strings.HasSuffix(line, " &")
				fields := strings.Fields(strings.TrimSuffix(line, " &"))
				switch {
				case strings.HasPrefix(line, "go run ./chapters/"), strings.HasPrefix(line, "go run ./examples/"):
					program, arguments = strings.TrimPrefix(fields[2], "./"), fields[3:]
				case strings.HasPrefix(line, "minikube "):
					arguments = fields[1:]
				case setupLine.MatchString(line):
					flush()
					out = append(out, example{readme: readme, command: line, setup: true})
					continue
				default:
					continue
				}
				flush()
				ex := &example{readme: readme, command: line, background: background, program: program, arguments: arguments}
				if background {
					out = append(out, *ex)
				} else {
					pending = ex
				}
			}
		case "text":
			if pending == nil {
				continue // an output block with no command of ours before it: prose
			}
			if tag == "journey" {
				pending.samples = append(pending.samples, sample{journey: true, expected: body, start: m[6], end: m[7]})
				continue
			}
			require.True(t, tag == "" || hostKinds[tag], "%s: unknown tag %q on an output block (have cgroup-v1, cgroup-v2, journey)", readme, tag)
			pending.samples = append(pending.samples, sample{host: tag, expected: body, start: m[6], end: m[7]})
		}
	}
	flush()
	return out
}

// sampleFor picks the output block to compare on a host of kind host: the untagged one, or the
// one tagged for this kind of host; nil when the README shows none for it.
func (ex example) sampleFor(host string) *sample {
	for i, s := range ex.samples {
		if s.host == "" || s.host == host {
			return &ex.samples[i]
		}
	}
	return nil
}

// hostKind says which kind of host this is, as the fence tags name them: the kubelet (like
// runc) decides between cgroup v1 and v2 by the file system type of /sys/fs/cgroup.
func hostKind() string {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		return "no-cgroups"
	}
	const cgroup2Magic = 0x63677270 // CGROUP2_SUPER_MAGIC
	if st.Type == cgroup2Magic {
		return "cgroup-v2"
	}
	return "cgroup-v1"
}

// A normalizer replaces, in both the README and the real output, what differs from run to run
// or from machine to machine. Each must stay narrow: TestNormalize gives every one a case it
// must leave alone.
type normalizer struct {
	name string
	re   *regexp.Regexp
	with func(match string) string
}

func replaceWith(s string) func(string) string { return func(string) string { return s } }

// ephemeralPorts is the range the kernel picks a port from when a program binds port 0 — the
// only ports that differ between runs — as this host sets it (Linux's default: 32768–60999).
var ephemeralPorts = func() [2]int {
	r := [2]int{32768, 60999} // Linux's default
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return r
	}
	if f := strings.Fields(string(data)); len(f) == 2 {
		lo, err1 := strconv.Atoi(f[0])
		hi, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			r = [2]int{lo, hi}
		}
	}
	return r
}()

// taughtPorts are the ports the chapters teach: a host whose ephemeral range covers them (some
// set it to 1024–65535) must not make them "PORT".
var taughtPorts = map[int]bool{53: true, 2379: true, 2380: true, 6443: true, 8443: true, 10248: true, 10249: true, 10250: true,
	10255: true, 10256: true, 10257: true, 10259: true}

// ageColumn is a kubectl-style AGE cell of an hour at most — what a README's cluster, minutes old,
// shows: seconds (kubectl counts them up to 119s), minutes, or minutes and seconds, between column
// gaps (two spaces or more), or at the end of a row.
var ageColumn = regexp.MustCompile(`(?m)( {2,}|\t)(\d{1,3}s|\d{1,2}m(\d{1,2}s)?)( {2,}|\t|$)`)

// storageProvisionerRestarts is the RESTARTS cell of storage-provisioner's row in kubectl's listing.
var storageProvisionerRestarts = regexp.MustCompile(`(?m)(storage-provisioner +\d+/\d+ +Running +)\d+(?: \(\d+[smh](?:\d+[smh])? ago\))?`)

// oneRestart is the RESTARTS cell of a running kube-system pod in kubectl's listing when it is 0
// or 1: a restart kubectl shows with its age, "1 (40s ago)". Two or more stay, to be seen.
var oneRestart = regexp.MustCompile(`(?m)^(kube-system +\S+ +\d+/\d+ +Running +)(?:0|1 \(\d+[smh](?:\d+[smh])? ago\))( )`)

var portInAddress = regexp.MustCompile(`((?:\d+\.\d+\.\d+\.\d+|localhost|\[[0-9a-f:]+\]):)(\d+)\b`)

func normalizePort(match string) string {
	m := portInAddress.FindStringSubmatch(match)
	port, _ := strconv.Atoi(m[2])
	if port >= ephemeralPorts[0] && port <= ephemeralPorts[1] && !taughtPorts[port] {
		return m[1] + "PORT"
	}
	return match
}

// temporaryNames are the prefixes of what the chapters make in the temporary directory, each
// followed by the random number os.MkdirTemp or os.CreateTemp gives it: only that number varies.
// The directory is the run's os.TempDir, or /tmp as the READMEs' samples show it.
var temporaryNames = regexp.MustCompile(`(?:/tmp|` + regexp.QuoteMeta(os.TempDir()) + `)/(` + temporaryPrefixes + `)\d+`)

const temporaryPrefixes = `kubelet-walkthrough-(?:lab-|03-)?|hollow-kubelet\.|minicluster-(?:relay-|tb-)?|toy-kubelet-|syncloop-manifests-`

// chaptersTemporary matches the names of what the chapters make in the temporary directory.
var chaptersTemporary = regexp.MustCompile(`^(` + temporaryPrefixes + `)\d+`)

// hostName is the value chapter 03 marks "[this host]" that only names the machine: its
// hostname, and nothing else after the marker.
var hostName = regexp.MustCompile(`\[this host\] "[a-z0-9.-]+"`)

// runtimeClaim is chapter 03's other "[this host]" line: whether a container runtime listens at
// the kubelet's default endpoint. Its two forms mean opposite things, so no normaliser merges
// them: asThisHost makes the README's sample say what is true on this host, and the program
// must say the same.
var runtimeClaim = regexp.MustCompile(`(?m)(no runtime at|a runtime listens at) (unix://\S+?)(?:, this chapter leaves it alone)? \[this host\]`)

// asThisHost rewrites a sample's runtime line to what this host has: a socket at the endpoint,
// or none. Only the sample is rewritten, never the program's output.
func asThisHost(sample string) string {
	return runtimeClaim.ReplaceAllStringFunc(sample, func(m string) string {
		endpoint := runtimeClaim.FindStringSubmatch(m)[2]
		if st, err := os.Stat(strings.TrimPrefix(endpoint, "unix://")); err == nil && st.Mode()&os.ModeSocket != 0 {
			return "a runtime listens at " + endpoint + ", this chapter leaves it alone [this host]"
		}
		return "no runtime at " + endpoint + " [this host]"
	})
}

var normalizers = []normalizer{
	{"klog header", regexp.MustCompile(`(?m)^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ `), func(m string) string { return m[:1] + " " }},
	{"ephemeral port", portInAddress, normalizePort},
	{"temporary name", temporaryNames, func(m string) string { return temporaryNames.ReplaceAllString(m, "TMPDIR/${1}N") }},
	{"machine-dependent value", hostName, replaceWith(`[this host] "HOSTNAME"`)},
	{"static pod UID", regexp.MustCompile(`\b[0-9a-f]{32}\b`), replaceWith("UID")}, // hashes the manifest's absolute path
	// The random suffixes of names a controller generates: pod-template hash and pod (apimachinery's
	// rand.String alphabet has no vowels, no 0, 1, 3: no word of a chapter's own is one).
	{"generated name", regexp.MustCompile(`(-[bcdfghjklmnpqrstvwxz2456789]{6,10})?-[bcdfghjklmnpqrstvwxz2456789]{5}\b`), replaceWith("-GENERATED")},
	// Elapsed times keep their sign: a step the story tells before its zero stays before it.
	{"elapsed time", regexp.MustCompile(`(?m)^\[\s*\d+\.\ds\]|^(\s+)[+-]\d+(\.\d)?s\b|\bran for \d+(\.\d+)?(ms|s)$`), func(m string) string {
		if t := strings.TrimSpace(m); t[0] == '+' || t[0] == '-' {
			return t[:1] + "ELAPSED"
		}
		return "ELAPSED"
	}},
	{"process ID", regexp.MustCompile(`\(PID \d+ here\)|--target \d+\b|/proc/\d+/`), func(m string) string {
		return regexp.MustCompile(`\d+`).ReplaceAllString(m, "N")
	}},
	// minikube's storage-provisioner starts beside the cluster's service network and may exit before
	// it answers, once or more: 0, "1 (40s ago)", "2 (22s ago)" from run to run (the README says so).
	{"storage-provisioner's restarts", storageProvisionerRestarts, func(m string) string {
		return storageProvisionerRestarts.ReplaceAllString(m, "${1}RESTARTS")
	}},
	// On a busy machine a control-plane pod may restart once (a kube-controller-manager that could
	// not renew its lease in time exits): 0 or "1 (117s ago)" (chapter 12's README says so).
	{"a kube-system pod's one restart", oneRestart, func(m string) string {
		return oneRestart.ReplaceAllString(m, "${1}RESTARTS$2")
	}},
	{"age column", ageColumn, func(m string) string { return ageColumn.ReplaceAllString(m, "${1}AGE$4") }},
	{"echoed Ctrl-C", regexp.MustCompile(`(?m)^\^C$`), replaceWith("")},
	// minikube names the reader's OS and architecture: "on Debian 12.11 (docker/amd64)", "on Darwin 15.5 (arm64)".
	{"minikube's host", regexp.MustCompile(`(?m)^(\* minikube v\d+\.\d+\.\d+) on [^()\n]+ \([\w/]+\)$`), func(m string) string { return m[:strings.Index(m, " on ")] + " on HOST" }},
	// minikube lists the addons in the order their goroutines finished (pkg/addons/addons.go, Enable).
	{"addons' order", regexp.MustCompile(`(?m)^\* Enabled addons: .*$`), func(m string) string {
		addons := strings.Split(strings.TrimPrefix(m, "* Enabled addons: "), ", ")
		slices.Sort(addons)
		return "* Enabled addons: " + strings.Join(addons, ", ")
	}},
	{"column padding", regexp.MustCompile(`[ \t]+`), replaceWith(" ")}, // column widths follow the values
	{"trailing spaces", regexp.MustCompile(`(?m) +$`), replaceWith("")},
}

func normalize(s string) string {
	for _, n := range normalizers {
		s = n.re.ReplaceAllStringFunc(s, n.with)
	}
	return strings.TrimRight(s, "\n")
}

// builds compiles each program once per test into .bin/readmes: TestBadInput (make test-unit) and
// TestChapterREADMEs (each of make test-readmes' legs, the same chapters as other hosts) share it,
// and go build relinks only what changed since — a link of a kubelet chapter is 10–20 s of CPU,
// mostly one core's. -s -w: no symbol table or DWARF, which halves the kubelet's link time, and
// neither a README's output nor a bad input's message needs them.
type builds struct {
	dir  string
	mu   sync.Mutex
	bins map[string]*built
}

// built is one program's build, done once however many tests ask for it at the same time.
type built struct {
	once sync.Once
	bin  string
	err  error
}

func newBuilds(t *testing.T) *builds {
	dir := repo.Path(".bin", "readmes")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return &builds{dir: dir, bins: map[string]*built{}}
}

// build builds program, a path from the repository's root (chapters/11-client, examples/kubelet-pods).
func (b *builds) build(program string) (string, error) {
	b.mu.Lock()
	p, ok := b.bins[program]
	if !ok {
		p = &built{}
		b.bins[program] = p
	}
	b.mu.Unlock()
	p.once.Do(func() {
		if st, err := os.Stat(repo.Path(program)); err != nil || !st.IsDir() {
			p.err = fmt.Errorf("%s is not a directory of this repository", program)
			return
		}
		bin := filepath.Join(b.dir, strings.ReplaceAll(program, "/", "_"))
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "./"+program)
		cmd.Dir = repo.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			p.err = fmt.Errorf("go build ./%s: %w\n%s", program, err, out)
			return
		}
		p.bin = bin
	})
	return p.bin, p.err
}

// binary is program's build, failing t if it does not build.
func (b *builds) binary(t *testing.T, program string) string {
	bin, err := b.build(program)
	require.NoError(t, err)
	return bin
}

// prebuild builds programs two at a time before the tests that run them, one after the other,
// ask: each link keeps one core busy, and the machine has two.
func (b *builds) prebuild(t *testing.T, programs []string) {
	var g errgroup.Group
	g.SetLimit(2)
	for _, program := range slices.Compact(slices.Sorted(slices.Values(programs))) {
		g.Go(func() error {
			_, err := b.build(program)
			return err
		})
	}
	require.NoError(t, g.Wait())
}

// scratch stands in for /tmp in a README's commands: the reader's /tmp is theirs, the test's is
// a directory of its own, so that runs never share a file.
type scratch string

func (s scratch) arguments(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "/tmp/", string(s)+"/")
	}
	return out
}

func (s scratch) output(got string) string { return strings.ReplaceAll(got, string(s)+"/", "/tmp/") }

// commandMaker makes the command that runs a program: exec.CommandContext, or a lab's Command.
type commandMaker func(ctx context.Context, name string, args ...string) *exec.Cmd

// run executes an example from the repository root. A command that says it serves until
// Ctrl-C gets SIGINT once it has said so, as a reader would press it.
func run(t *testing.T, command commandMaker, bin string, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := command(ctx, bin, args...)
	cmd.Dir = ".."
	cmd.WaitDelay = 10 * time.Second // a descendant holding the output open cannot hang the test
	var out syncbuf.Buffer
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

var removedDir = regexp.MustCompile(`removed (\S+)`)

// stoppedLast checks the promise of a clean shutdown: once a program says it stopped, nothing
// more is printed (no late log line of etcd's client, gRPC or klog).
func stoppedLast(t *testing.T, command, got string) {
	t.Helper()
	if stopped, after := afterStopped(got); len(after) > 0 {
		assert.Empty(t, after, "`%s` printed after %q", command, stopped)
	}
}

// afterStopped finds the first line that says the program stopped, and the lines after it.
func afterStopped(output string) (stopped string, after []string) {
	lines := strings.Split(strings.TrimRight(output, "\n"), "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "Stopped") {
			return line, lines[i+1:]
		}
	}
	return "", nil
}

// programREADMEs are the READMEs of the programs under examples/ whose samples are checked as
// the chapters' are, from the chapters directory: the production client's, on chapter 08's
// cluster as chapter 11's README.
var programREADMEs = []string{"../examples/kubelet-pods/README.md"}

// readmes are the READMEs TestChapterREADMEs runs: every chapter's, and programREADMEs.
func readmes(t *testing.T) []string {
	t.Helper()
	chapters, err := filepath.Glob("[0-9][0-9]-*/README.md")
	require.NoError(t, err)
	require.NotEmpty(t, chapters)
	for _, readme := range programREADMEs {
		require.FileExists(t, readme)
	}
	return append(chapters, programREADMEs...)
}

// TestChapterREADMEs runs every `go run ./chapters/...` and `go run ./examples/...` command of
// every chapter README and of programREADMEs, as built binaries from the repository root, and
// compares the output with the README's sample; its subtests are named after the README's
// directory (11-client, kubelet-pods). `make update-golden` (go test -run TestChapterREADMEs
// ./chapters/ -update) rewrites the samples this kind of host shows.
func TestChapterREADMEs(t *testing.T) {
	b := newBuilds(t)
	host := hostKind()

	for _, readme := range readmes(t) {
		t.Run(filepath.Base(filepath.Dir(readme)), func(t *testing.T) {
			holdTemporaryDirectory(t)
			if exs := examples(t, readme); slices.ContainsFunc(exs, func(ex example) bool { return ex.program == "chapters/08-minicluster" }) {
				tier.Require(t, "private network", noNetns) // chapter 08's cluster, and the READMEs run on it
			}
			exs := examples(t, readme)
			require.NotEmpty(t, exs, "%s shows no command with its output", readme)
			command, program, view := commandMaker(exec.CommandContext), func(ex example) string { return b.binary(t, ex.program) }, func(s string) string { return s }
			if slices.ContainsFunc(exs, example.inLab) {
				l := startLab(t)
				command, view = l.Command, lab.ReaderView
				program = func(ex example) string {
					if ex.inLab() {
						return "minikube"
					}
					return b.binary(t, ex.program)
				}
			}
			tmp := scratch(t.TempDir())
			var replaced []sample
			var outputs []string
			for _, ex := range exs {
				if ex.setup {
					cmd := exec.Command("bash", "-c", strings.ReplaceAll(ex.command, "/tmp/", string(tmp)+"/"))
					cmd.Dir = ".."
					out, err := cmd.CombinedOutput()
					require.NoError(t, err, "%s: `%s`: %s", readme, ex.command, out)
					continue
				}
				if ex.background {
					startBackground(t, program(ex), ex, tmp)
					continue
				}
				t.Run(ex.command, func(t *testing.T) {
					want := ex.sampleFor(host)
					if want == nil {
						t.Skipf("%s shows the output of `%s` for %s hosts; this one is %s (CI runs both kinds)",
							readme, ex.command, ex.samples[0].host, host)
					}
					got, err := run(t, command, program(ex), tmp.arguments(ex.arguments))
					got = view(tmp.output(got))
					wantFailure := strings.Contains(want.expected, `"command failed"`) || failureLine.MatchString(want.expected)
					if wantFailure {
						assert.Error(t, err, "the README shows %q failing", ex.command)
					} else {
						assert.NoError(t, err, "%s:\n%s", ex.command, got)
					}
					for _, m := range removedDir.FindAllStringSubmatch(got, -1) {
						assert.NoDirExists(t, m[1], "the program said it removed %s", m[1])
					}
					stoppedLast(t, ex.command, got)
					if *update {
						replaced = append(replaced, *want)
						outputs = append(outputs, got)
						return
					}
					if want.journey {
						compareJourney(t, readme, ex.command, want.expected, got)
						return
					}
					assert.Equal(t, normalize(asThisHost(want.expected)), normalize(got),
						"%s: the output of `%s` differs from the README (make update-golden rewrites it)", readme, ex.command)
				})
			}
			if *update && len(replaced) > 0 {
				rewrite(t, readme, replaced, outputs)
			}
		})
	}
}

// journeyNote is the note whose table of steps chapter 07's journey follows.
const journeyNote = "../notes/07-syncloop.md"

// compareJourney compares chapter 07's journey with its README sample as what is taught: every
// step of the note's table, in its order, with its goroutine, what it does and a function on
// its stack (other steps between them are free: how many a run prints, and so their numbers,
// depend on how the machine scheduled the kubelet's goroutines); and what the output says
// besides its steps — its introduction, the phases, the pod, the summary but for its count —
// exactly.
func compareJourney(t *testing.T, readme, command, sample, got string) {
	t.Helper()
	steps, err := journeynote.NoteSteps(journeyNote)
	require.NoError(t, err)
	assert.NoError(t, journeynote.Follows(got, steps), "%s: the output of `%s` does not follow %s:\n%s", readme, command, journeyNote, got)
	assert.Equal(t, normalize(journeynote.Prose(sample)), normalize(journeynote.Prose(got)),
		"%s: the output of `%s` says something else than the README besides its steps (make update-golden rewrites it)", readme, command)
}

// holdTemporaryDirectory fails a README's test if its commands leave anything in the temporary
// directory they share with the test (os.TempDir). It checks when the README's test ends, after
// its background commands have stopped: a chapter removes what it made, also when stopped with
// Ctrl-C. The test's own directories (t.TempDir, named after the test) are not the chapter's.
// In a TMPDIR of the run's own (make test gives each stage one) anything new is held; in a
// shared /tmp, where other programs come and go, only what the chapters name theirs.
func holdTemporaryDirectory(t *testing.T) {
	_, own := os.LookupEnv("TMPDIR")
	entries := func() []string {
		list, err := os.ReadDir(os.TempDir())
		require.NoError(t, err)
		var names []string
		for _, e := range list {
			if !strings.HasPrefix(e.Name(), "Test") && (own || chaptersTemporary.MatchString(e.Name())) {
				names = append(names, e.Name())
			}
		}
		return names
	}
	before := entries()
	t.Cleanup(func() {
		var left []string
		for _, name := range entries() {
			if !slices.Contains(before, name) {
				left = append(left, name)
			}
		}
		assert.Empty(t, left, "what the README's commands left in %s", os.TempDir())
	})
}

// startLab starts a lab for a README's commands, stopped when the README's test is done: it must
// leave nothing on this machine.
func startLab(t *testing.T) *lab.Lab {
	t.Helper()
	tier.Require(t, labtest.Tier, labtest.Requirements())
	root, err := labtest.Root()
	require.NoError(t, err)
	before := lab.TakeTrace()
	l, err := lab.Start(context.Background(), labtest.Options(root))
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, l.Stop(context.Background()))
		assert.Empty(t, append(l.Left(), lab.Leftovers(before, lab.TakeTrace())...), "what the README's lab left")
	})
	return l
}

// startBackground starts a README's background command, waits until it says it serves, and
// gives it Ctrl-C when the README's test is done: it must then exit cleanly, saying it stopped
// last.
func startBackground(t *testing.T, bin string, ex example, tmp scratch) {
	cmd := exec.Command(bin, tmp.arguments(ex.arguments)...)
	cmd.Dir = ".."
	cmd.WaitDelay = 10 * time.Second
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			assert.NoError(t, err, "%s after Ctrl-C:\n%s", ex.command, out.String())
			stoppedLast(t, ex.command, out.String())
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop within a minute of Ctrl-C:\n%s", ex.command, out.String())
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "until Ctrl-C") },
		3*time.Minute, 100*time.Millisecond, "%s never said it serves:\n%s", ex.command, &out) // &out: what it holds when the wait gives up
}

// rewrite replaces the given blocks of readme with real outputs, last block first so that
// earlier offsets stay valid.
func rewrite(t *testing.T, readme string, samples []sample, outputs []string) {
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	for i := len(samples) - 1; i >= 0; i-- {
		body := outputs[i]
		if !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		data = append(data[:samples[i].start], append([]byte(body), data[samples[i].end:]...)...)
	}
	require.NoError(t, os.WriteFile(readme, data, 0o644))
	t.Logf("rewrote %d samples in %s", len(samples), readme)
}

// TestNormalize pins every normalizer with a case it must change and a case it must leave
// alone, since a rule too broad would hide real changes.
func TestNormalize(t *testing.T) {
	tmp := os.TempDir()
	inRange := strconv.Itoa(ephemeralPorts[0] + 1)
	tests := map[string]struct{ change, want, keep string }{
		"klog header": {
			change: `E1130 13:24:29.723421   21644 run.go:72] "command failed"`, want: `E run.go:72] "command failed"`,
			keep: `I1130 is not a log header without its time`,
		},
		"ephemeral port": {
			change: "curl -s http://127.0.0.1:" + inRange + "/pods", want: "curl -s http://127.0.0.1:PORT/pods",
			keep: "curl -s http://127.0.0.1:10255/pods and https://10.200.0.1:10250 and [::1]:10248 and localhost:8443",
		},
		"temporary name": {
			change: "removed " + tmp + "/hollow-kubelet.928208209 and " + tmp + "/kubelet-walkthrough-4242.log and /tmp/minicluster-77/kubeconfig",
			want:   "removed TMPDIR/hollow-kubelet.N and TMPDIR/kubelet-walkthrough-N.log and TMPDIR/minicluster-N/kubeconfig",
			keep:   "the static pods in examples/static-pods/web.yaml, " + tmp + "/kubelet-walkthrough.kubeconfig, " + tmp + "/other-12345",
		},
		"machine-dependent value": {
			change: "node name: [this host] \"vm\"", want: "node name: [this host] \"HOSTNAME\"",
			// Whether a runtime listens is not a value but a claim: asThisHost, not a normaliser.
			keep: "node name: \"walkthrough\"; [this host] and then anything else\n" +
				"no runtime at unix:///run/containerd/containerd.sock [this host]\n" +
				"a runtime listens at unix:///run/containerd/containerd.sock, this chapter leaves it alone [this host]",
		},
		"generated name": {
			change: "kube-system   pod/coredns-559f6c778d-mvjkb   1/1   Running", want: "kube-system pod/coredns-GENERATED 1/1 Running",
			keep: "kube-system pod/kube-scheduler-minikube and pod/kube-proxy-minikube and pod/web-nginx",
		},
		"elapsed time": {
			change: "[ 12.5s] kubeadm init done\n    +0.4s  [journal]  refused\n    -2.8s  [journal]  before\n      +6s  [apiserver]  mirrors\n42 steps; the kubelet ran for 5s",
			want:   "ELAPSED kubeadm init done\n+ELAPSED [journal] refused\n-ELAPSED [journal] before\n+ELAPSED [apiserver] mirrors\n42 steps; the kubelet ELAPSED",
			keep:   "error: timed out after 10.0s; retry in +1.5s; a 10m0s token; it ran for 5s before it failed",
		},
		"process ID": {
			change: "systemd is PID 1 (PID 3738 here); sudo nsenter --target 3738 --all; nsenter --net=/proc/3712/ns/net", want: "systemd is PID 1 (PID N here); sudo nsenter --target N --all; nsenter --net=/proc/N/ns/net",
			keep: "systemd is PID 1",
		},
		"static pod UID": {
			change: "ADD default/web-walkthrough uid b6f851ff054226b07e6088ba905d6e9b", want: "ADD default/web-walkthrough uid UID",
			keep: "commit a1c3e3e4b5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0 stays",
		},
		"age column": {
			change: "kube-system   etcd-walkthrough   Running   12s\nnode/minikube   Ready   control-plane   118s   v1.37.2\nweb   1/1   Running   3m20s",
			want:   "kube-system etcd-walkthrough Running AGE\nnode/minikube Ready control-plane AGE v1.37.2\nweb 1/1 Running AGE",
			keep:   "error: timed out after 10s\nweb 1/1 Running 5h12m\ncert expires in 364d",
		},
		"storage-provisioner's restarts": {
			change: "kube-system   pod/storage-provisioner   1/1   Running   2 (22s ago)   52s\nkube-system   pod/storage-provisioner   1/1   Running   0   52s",
			want:   "kube-system pod/storage-provisioner 1/1 Running RESTARTS AGE\nkube-system pod/storage-provisioner 1/1 Running RESTARTS AGE",
			keep:   "kube-system pod/coredns-x 1/1 Running 2 (5s ago) AGE\nkube-system storage-provisioner <none>",
		},
		"a kube-system pod's one restart": {
			change: "kube-system   pod/storage-provisioner   1/1   Running   1 (40s ago)   52s\nkube-system   pod/kube-controller-manager-minikube   1/1   Running   1 (117s ago)   117s\nkube-system   pod/etcd-minikube   1/1   Running   0   52s",
			want:   "kube-system pod/storage-provisioner 1/1 Running RESTARTS AGE\nkube-system pod/kube-controller-manager-minikube 1/1 Running RESTARTS AGE\nkube-system pod/etcd-minikube 1/1 Running RESTARTS AGE",
			keep:   "kube-system pod/coredns-x 1/1 Running 2 (5s ago) AGE\nkube-system pod/coredns-x 0/1 CrashLoopBackOff 1 (5s ago) AGE\ndefault pod/web 1/1 Running 1 (5s ago) AGE\nkube-system storage-provisioner <none>",
		},
		"echoed Ctrl-C": {
			change: "^C", want: "",
			keep: "press ^C to stop",
		},
		"minikube's host": {
			change: "* minikube v1.38.1 on Debian 12.11 (docker/amd64)\n* minikube v1.38.1 on Darwin 15.5 (arm64)", want: "* minikube v1.38.1 on HOST\n* minikube v1.38.1 on HOST",
			keep: "* minikube v1.38.1 on the lab's Docker engine? no: a line of prose",
		},
		"addons' order": {
			change: "* Enabled addons: storage-provisioner, default-storageclass", want: "* Enabled addons: default-storageclass, storage-provisioner",
			keep: "* Enabled addons: default-storageclass\n! Enabling 'storage-provisioner' returned an error: x, y",
		},
		"column padding": {
			change: "NAME    STATUS", want: "NAME STATUS",
			keep: "NAME\nSTATUS",
		},
		"trailing spaces": {
			change: "Running   \nPending", want: "Running\nPending",
			keep: "Running Pending",
		},
	}
	for _, n := range normalizers {
		tt, ok := tests[n.name]
		if !assert.True(t, ok, "normalizer %q has no test case", n.name) {
			continue
		}
		t.Run(n.name, func(t *testing.T) {
			assert.Equal(t, tt.want, normalize(tt.change), "must change: %q", tt.change)
			assert.Equal(t, tt.keep, normalize(tt.keep), "must keep: %q", tt.keep)
		})
	}
}

// TestNormalizeKeepsOpposites: lines that mean opposite things stay apart once normalised — the
// must-keep cases of chapter 03, whose steps ran, failed or were skipped, on a host with or
// without a runtime, on cgroup v1 or v2.
func TestNormalizeKeepsOpposites(t *testing.T) {
	step := func(outcome string) string {
		return "11. container runtime (PreInitRuntimeService)          server.go#L798-L800   " + outcome
	}
	tests := []struct{ name, one, other string }{
		{"skipped or ran", step("skipped"), step("ran")},
		{"failed or ran", step("failed"), step("ran")},
		{"no-op or ran", step("no-op"), step("ran")},
		{"a runtime or none", "    no runtime at unix:///run/containerd/containerd.sock [this host]",
			"    a runtime listens at unix:///run/containerd/containerd.sock, this chapter leaves it alone [this host]"},
		{"cgroup v1 or v2", "    MemoryQoS gate on; this host uses cgroup v1: the kubelet warns that MemoryQoS needs cgroup v2",
			"    MemoryQoS gate on; this host uses cgroup v2: the kubelet checks the kernel version"},
		{"the counts", "24 steps: 12 ran here with the real functions, 2 were no-ops for this configuration, 1 failed as they would on this machine, 9 were skipped.",
			"24 steps: 13 ran here with the real functions, 2 were no-ops for this configuration, 0 failed as they would on this machine, 9 were skipped."},
		{"anonymous or not", "    anonymous=true, webhook=false, authorization=AlwaysAllow", "    anonymous=false, webhook=false, authorization=AlwaysAllow"},
		{"the watchdog or none", "    no systemd watchdog here (WATCHDOG_USEC unset): the checker idles", "    systemd watchdog configured: the checker pings it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.NotEqual(t, normalize(tt.one), normalize(tt.other), "%q and %q normalise to one line", tt.one, tt.other)
		})
	}
}

// TestEveryCommandShowsACgroupV2Host: most readers run cgroup v2, so every command a README
// runs shows what such a host prints (untagged, or tagged cgroup-v2); a cgroup-v1 sample is
// optional, and a v1 host skips, with the reason, a command shown for v2 hosts only. Without this,
// a README that lost its v2 sample would be skipped by the v2 leg of CI instead of failing.
func TestEveryCommandShowsACgroupV2Host(t *testing.T) {
	commands := 0
	for _, readme := range readmes(t) {
		for _, ex := range examples(t, readme) {
			if ex.background || ex.setup {
				continue // a server started for the commands after it, or files made for them: no output of their own
			}
			commands++
			assert.NotNil(t, ex.sampleFor("cgroup-v2"), "%s: `%s` shows no output for a cgroup v2 host (an untagged ```text block, or ```text cgroup-v2)", readme, ex.command)
		}
	}
	assert.Greater(t, commands, 10, "the READMEs' commands were found")
}
