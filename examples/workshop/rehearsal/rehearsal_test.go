package rehearsal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/labtest"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/syncbuf"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/workshop/checks"
)

var (
	showOutput = flag.Bool("show", false, "log every command's output, not only a failing one's")
	from       = flag.Int("from", 1, "for working on one exercise: skip the exercises before this one (those after it may depend on them)")
)

// inLab marks the test process that runs inside the lab.
const inLab = "WALKTHROUGH_REHEARSAL_IN_LAB"

// noLab says why the rehearsal cannot run in a lab here; nil when it runs in one.
var noLab error

// TestMain runs the rehearsal inside a lab (chapters/machinery/lab): real minikube on a real Docker engine in
// namespaces of their own, the test process itself on the engine's network — a Linux laptop with
// minikube's docker driver, where the node's address answers — with the lab's environment, which
// every command inherits. The modules are downloaded first, outside: the lab has no route to the
// module proxy. When the lab stops, nothing of it may be left on this machine. Tests that do not
// need the lab (not the rehearsal) run outside it.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(inLab) != "" || !rehearsing() {
		os.Exit(m.Run())
	}
	// The attendee's requirements too: a machine without idmapped mounts cannot rehearse as one.
	if noLab = errors.Join(labtest.Requirements(), lab.AttendeeRequirements()); noLab != nil {
		os.Exit(m.Run()) // the rehearsal says why it cannot run
	}
	if out, err := exec.Command("go", "mod", "download").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go mod download: %v\n%s", err, out)
		os.Exit(1)
	}
	os.Exit(runInLab())
}

// rehearsing says whether this run's -test.run and -test.skip select TestRehearseWorkshop.
func rehearsing() bool {
	matches := func(flagName string) bool {
		f := flag.Lookup(flagName)
		if f == nil || f.Value.String() == "" {
			return flagName == "test.run"
		}
		ok, _ := regexp.MatchString(strings.Split(f.Value.String(), "/")[0], "TestRehearseWorkshop")
		return ok
	}
	return matches("test.run") && !matches("test.skip")
}

// runInLab starts a lab, runs this test binary again inside it, stops the lab, and returns the
// tests' exit code — 1 if the lab left anything behind.
func runInLab() int {
	root, err := labtest.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// checkLaptop plans a build of chapter 04 as the attendee and expects a link: the machine's
	// build cache holds the kubelet's packages (after make test's earlier stages, at once).
	warm := exec.Command("go", "list", "-export", "./chapters/04-runkubelet")
	warm.Dir = root
	if out, err := warm.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go list -export ./chapters/04-runkubelet: %v\n%s", err, out)
		return 1
	}
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	before := lab.TakeTrace()
	opts := labtest.Options(root)
	opts.Log = os.Stderr
	// The attendee runs the workshop: a normal user in the docker group, who writes the
	// checkout and Go's caches as their owner.
	opts.Attendee = labtest.Attendee(root)
	l, err := lab.Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "the rehearsal's lab:", err)
		return 1
	}
	// This test binary, where the attendee may run it (go test's directory is root's alone).
	self := filepath.Join(l.Dir, filepath.Base(os.Args[0]))
	if err := linkOrCopy(os.Args[0], self); err != nil {
		fmt.Fprintln(os.Stderr, "the rehearsal's test binary in the lab:", err)
		_ = l.Stop(context.Background())
		return 1
	}
	cmd := l.CommandIn(context.Background(), "", self, os.Args[1:]...)
	cmd.Env = append(cmd.Env, inLab+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		code = 1
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
	}
	if err := l.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the rehearsal's lab:", err)
		code = 1
	}
	left := append(l.Left(), lab.Leftovers(before, lab.TakeTrace())...)
	if now, err := os.ReadFile("/etc/passwd"); err != nil || !bytes.Equal(now, passwd) {
		left = append(left, fmt.Sprintf("/etc/passwd changed (the attendee is the lab's user, not this machine's; %v)", err))
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "the rehearsal's lab left on this machine:\n  %s\n", strings.Join(left, "\n  "))
		code = 1
	}
	return code
}

// linkOrCopy makes to the file from: a hard link, or a copy where there can be none.
func linkOrCopy(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// requirements says what this machine lacks to rehearse (nil: nothing).
func requirements() error {
	var missing []error
	if os.Getenv(inLab) == "" {
		if noLab == nil {
			noLab = labtest.Requirements()
		}
		missing = append(missing, fmt.Errorf("the lab: %w", noLab))
	}
	for _, tool := range []string{"bash", "make", "jq", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, fmt.Errorf("%s on PATH", tool))
		}
	}
	return errors.Join(missing...)
}

// rehearsal is one run of the workshop: a shell environment like an attendee's, and what ran.
type rehearsal struct {
	t          *testing.T
	root       string   // the repository, absolute: every command's working directory
	home       string   // the attendee's home: bin/, .kube/, .minikube/
	env        []string // the commands' environment
	kubeconfig string
	// ran is the current exercise's commands so far, for its answers.
	ran runs
}

// newRehearsal makes the attendee's environment, inside the lab: the lab's minikube and kubectl
// first on PATH (nothing of the node's: no crictl or kubelet on the "laptop"), go, a home of its
// own, and the lab's settings — minikube's home and cache, KUBECONFIG, the Docker engine, the
// offline MINIKUBE_* settings. The Go caches stay the machine's, so that the builds of the day
// are links, as after INSTRUCTOR.md's "Before the day".
func newRehearsal(t *testing.T, absRoot string) *rehearsal {
	home := t.TempDir()
	labBin := filepath.SplitList(os.Getenv("PATH"))[0] // the lab's: minikube, kubectl
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	out, err := exec.Command(goBin, "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOROOT").Output()
	require.NoError(t, err)
	var goEnv map[string]string
	require.NoError(t, json.Unmarshal(out, &goEnv))
	r := &rehearsal{t: t, root: absRoot, home: home, kubeconfig: os.Getenv("KUBECONFIG")}
	me, err := user.Current() // the lab's attendee
	require.NoError(t, err)
	r.env = []string{
		"HOME=" + home, "USER=" + me.Username, "LOGNAME=" + me.Username, "SHELL=/bin/bash", "TERM=dumb", "LANG=C.UTF-8",
		"PATH=" + strings.Join([]string{labBin, filepath.Join(goEnv["GOROOT"], "bin"), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}, ":"),
		"GOCACHE=" + goEnv["GOCACHE"], "GOMODCACHE=" + goEnv["GOMODCACHE"], "GOPATH=" + goEnv["GOPATH"],
		"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=" + os.Getenv("GOFLAGS"),
	}
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		if key == "KUBECONFIG" || key == "TMPDIR" || strings.HasPrefix(key, "MINIKUBE_") || strings.HasPrefix(key, "DOCKER_") {
			r.env = append(r.env, kv)
		}
	}
	return r
}

// Timeouts: the day's first builds may compile (INSTRUCTOR.md's "Before the day"); anything
// else is a link or a request.
const (
	buildTimeout   = 25 * time.Minute
	commandTimeout = 6 * time.Minute
	watchTimeout   = 5 * time.Minute
)

// run runs one command as written, with bash, in the repository, and checks it against its
// sample: a watching command runs until its output shows the sample, then gets Ctrl-C (SIGINT to
// its process group, as a terminal sends it); any other runs to its end, must exit 0 unless its
// sample shows a failure, and must print its sample.
func (r *rehearsal) run(c Command, where string, timeout time.Duration) run {
	t := r.t
	t.Helper()
	if len(c.Typed()) > 0 { // a program's prompt, and what the reader types there
		return r.conversation(c, where, timeout)
	}
	watch := IsWatch(c.Text)
	if watch {
		timeout = watchTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", c.Text)
	cmd.Dir = r.root
	cmd.Env = append([]string{}, r.env...)
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	require.NoError(t, cmd.Start(), "%s %s", where, c)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	interrupted, shown := false, false
	var err error
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case err = <-done:
			break loop
		case <-tick.C:
			if watch && !interrupted && Match(c.Sample, out.String(), false) == "" {
				shown, interrupted = true, true
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // Ctrl-C
				go func() {
					time.Sleep(15 * time.Second)
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				}()
			}
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Fatalf("%s %s\ndid not end within %s; it printed:\n%s", where, c, timeout, out.String())
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything it left behind in its group
	took := time.Since(start)
	// What minikube prints only because of the lab's settings is not what an attendee sees.
	res := run{cmd: c, out: lab.ReaderView(out.String()), printed: out.String(), failed: err != nil && !interrupted}
	if *showOutput {
		t.Logf("%s $ %s  (%.1fs)\n%s", where, c.Text, took.Seconds(), strings.Join(Lines(res.out), "\n"))
	} else {
		t.Logf("%s $ %s  (%.1fs)", where, c.Text, took.Seconds())
	}
	switch {
	case watch && !shown:
		t.Fatalf("%s %s\nwatched until it ended, and never showed its sample (first line missing: %q); it printed:\n%s", where, c, Match(c.Sample, res.out, false), res.out)
	case !res.failed && !watch && c.MustFail():
		t.Fatalf("%s %s\nsucceeded, and its sample shows nothing but a failure; it printed:\n%s", where, c, res.out)
	case res.failed && !c.MayFail():
		t.Fatalf("%s %s\nfailed (%v), and its sample shows no failure; it printed:\n%s%s", where, c, err, res.out, r.nodeLogs())
	case !watch:
		if miss := Match(c.Sample, res.out, res.failed); miss != "" {
			t.Fatalf("%s %s\ndid not print what its sample shows (first line missing: %q); it printed:\n%s", where, c, miss, res.out)
		}
	}
	r.ran = append(r.ran, res)
	return res
}

// blocks runs every command of some blocks; around, when not nil, is called before each command
// and after it.
func (r *rehearsal) blocks(bs []Block, timeout time.Duration, around func(c Command, ran bool)) {
	for _, b := range bs {
		for _, c := range b.Commands {
			if around != nil {
				around(c, false)
			}
			r.run(c, fmt.Sprintf("%s:%d", b.File, c.Line), timeout)
			if around != nil {
				around(c, true)
			}
		}
	}
}

// check runs an exercise's checker in this process, against the kubeconfig minikube wrote.
func (r *rehearsal) check(e checks.Exercise) checks.Result {
	t := r.t
	t.Helper()
	env := checks.Env{Answers: filepath.Join(r.root, "examples", "workshop", "answers"), Root: r.root}
	if !e.Offline {
		cfg, err := clientcmd.BuildConfigFromFlags("", r.kubeconfig)
		require.NoError(t, err)
		env.Config = cfg
		env.Client, err = kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
	}
	res, err := e.Check(context.Background(), env)
	require.NoError(t, err, "exercise %d could not be checked", e.Number)
	return res
}

// answerFile is an exercise's answer file.
func answerFile(n int) string {
	e, _ := checks.Find(n)
	return e.Answers
}

// beforeReason is a piece of what each checker must say is missing before its exercise: the
// reason it fails is the exercise not done, not anything else.
var beforeReason = map[int]string{
	1: "still empty", 2: "the mirror pod default/workshop-pod-minikube", 3: "the kubelet's own words",
	4: "still empty", 5: "still empty", 6: "still empty", 7: "still empty",
	8: "the ServiceAccount kubelet-reader/kubelet-reader", 9: "still empty", 10: "still empty",
	11: "the DaemonSet kubelet-reader/kubelet-reader", 12: "the exercise's test to pass", 13: "the exercise's test to pass",
	14: "the Pod probes/dns", 15: "still empty", 16: "still empty", 17: "still empty",
	18: "still empty", 19: "still empty", 20: "still empty",
}

// solve does what an attendee who solved a coding exercise did: writes the reference solution
// into the exercise's file (checks.SolutionFiles), which the checker builds as it finds it. The
// file as the checkout had it comes back when the exercise's test ends.
func (r *rehearsal) solve(t *testing.T, e checks.Exercise) {
	files, err := checks.SolutionFiles(r.root, e)
	require.NoError(t, err)
	for dst, src := range files {
		original, err := os.ReadFile(dst)
		require.NoError(t, err)
		solution, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, solution, 0o644))
		t.Cleanup(func() { require.NoError(t, os.WriteFile(dst, original, 0o644)) })
		t.Logf("%s: the reference solution, as the attendee's code", strings.TrimPrefix(dst, r.root+"/"))
	}
}

// keepAnswers moves an answers directory already in the repository aside for the rehearsal (to
// answers.kept beside it: the attendee's checkout and its TMPDIR are different mounts in the lab,
// and a rename does not cross mounts), and puts it back afterwards. The directory is the
// checkout's one: a second rehearsal in the same checkout at the same time (TestRehearseWorkshop
// and TestRehearseOnThisMachine, each resetting it) fails at once, saying so, where it would
// otherwise fail an exercise whose answers the other removed.
func keepAnswers(t *testing.T, absRoot string) {
	workshop := filepath.Join(absRoot, "examples", "workshop")
	unlock, err := lockAnswers(workshop)
	require.NoError(t, err)
	t.Cleanup(unlock) // after the answers are back
	answers := filepath.Join(workshop, "answers")
	kept := answers + ".kept"
	if _, err := os.Lstat(answers); os.IsNotExist(err) {
		t.Cleanup(func() { _ = os.RemoveAll(answers) })
		return
	}
	require.NoError(t, os.Rename(answers, kept))
	t.Cleanup(func() {
		_ = os.RemoveAll(answers)
		_ = os.Rename(kept, answers)
	})
}

// lockAnswers takes the workshop directory for one rehearsal (an exclusive flock, held until
// unlock), or says that another rehearsal has it.
func lockAnswers(workshop string) (unlock func(), err error) {
	lock, err := os.Open(workshop)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("another rehearsal is using %s/answers (flock: %w): the rehearsals in one checkout run one after the other, as make test-rehearsal runs them", workshop, err)
	}
	return func() { _ = lock.Close() }, nil
}

func TestRehearseWorkshop(t *testing.T) {
	absRoot, err := filepath.Abs(root)
	require.NoError(t, err)
	tier.Require(t, "rehearsal", requirements())
	keepAnswers(t, absRoot)
	r := newRehearsal(t, absRoot)
	// The minikube on the attendee's PATH is minikube's own build, nothing else.
	minikube, err := exec.LookPath("minikube")
	require.NoError(t, err)
	version, err := labtest.RealMinikube(absRoot, minikube)
	require.NoError(t, err, "the rehearsal runs real minikube")
	t.Logf("minikube %s, minikube's own build of k8s.io/minikube (%s)", version, minikube)
	read := func(file string) []Block {
		bs, err := ReadBlocks(r.root, file)
		require.NoError(t, err)
		return bs
	}
	section := func(bs []Block, heading string) []Block {
		var out []Block
		for _, b := range bs {
			if b.Heading == heading {
				out = append(out, b)
			}
		}
		require.NotEmpty(t, out, "INSTRUCTOR.md has a block under %q", heading)
		return out
	}
	instr := read(instructor)

	start := time.Now()
	r.blocks(section(instr, beforeTheDay), buildTimeout, nil)
	t.Logf("before the day: %s", time.Since(start).Round(time.Second))
	r.blocks(read(workshopReadme), commandTimeout, nil)
	t.Run("the attendee's laptop", r.checkLaptop)

	took := map[int]time.Duration{}
	for _, e := range checks.Exercises {
		if e.Number < *from || onThisMachine[e.Number] {
			continue
		}
		ok := t.Run(fmt.Sprintf("exercise %d", e.Number), func(t *testing.T) {
			r.t = t
			slate := time.Now()
			r.ran = nil
			r.blocks(section(instr, cleanSlate), commandTimeout, nil)
			t.Logf("clean slate: %s", time.Since(slate).Round(100*time.Millisecond))

			before := r.check(e)
			require.False(t, before.Passed(), "exercise %d passes before its commands", e.Number)
			require.Contains(t, beforeReason, e.Number, "what exercise %d's checker says before its commands", e.Number)
			assert.Contains(t, strings.Join(before.Missing, "\n"), beforeReason[e.Number], "why exercise %d fails before its commands", e.Number)
			t.Logf("exercise %d before its commands: FAIL, %s", e.Number, before.Missing[0])

			begin := time.Now()
			r.ran = nil
			checked := false
			r.blocks(read(exerciseReadme(e)), commandTimeout, func(c Command, ran bool) {
				if c.Text != fmt.Sprintf("make check EX=%d", e.Number) || checked {
					return
				}
				if ran {
					// Right after the README's own check, before what the README undoes after it.
					took[e.Number] = time.Since(begin)
					after := r.check(e)
					require.True(t, after.Passed(), "exercise %d after its commands still misses: %v", e.Number, after.Missing)
					checked = true
					return
				}
				// The attendee's part: the answers, from what the commands printed; for a coding
				// exercise, the code.
				files, err := answersFor(e.Number, r.ran)
				require.NoError(t, err, "exercise %d's answers, from its commands' output", e.Number)
				for name, content := range files {
					require.NoError(t, os.WriteFile(filepath.Join(r.root, "examples", "workshop", "answers", name), []byte(content), 0o644))
					t.Logf("answers/%s:\n%s", name, content)
				}
				if e.Coding() {
					r.solve(t, e)
				}
			})
			require.True(t, checked, "exercise %d's README runs `make check EX=%d`", e.Number, e.Number)
			r.noCredentialLeft(e)
			t.Logf("exercise %d: FAIL before, PASS after; its commands took %s", e.Number, took[e.Number].Round(100*time.Millisecond))
		})
		r.t = t
		if !ok {
			t.FailNow() // the next exercises would start from a node in an unknown state
		}
	}
	r.blocks(section(instr, afterTheWorkshop), commandTimeout, nil)

	// What INSTRUCTOR.md's table says against what this run took. A run several times slower than
	// the table's range is a regression worth a look; within a factor of three, machines differ.
	var report strings.Builder
	for _, row := range timings(t) {
		d, ok := took[row.number]
		if !ok {
			continue
		}
		fmt.Fprintf(&report, "  exercise %2d: %5.1f s (INSTRUCTOR.md: %d–%d s)\n", row.number, d.Seconds(), row.low, row.top)
		assert.LessOrEqual(t, d.Seconds(), 3*float64(row.top), "exercise %d took %s, INSTRUCTOR.md says %d–%d s", row.number, d.Round(time.Second), row.low, row.top)
	}
	t.Logf("the whole rehearsal: %s\n%s", time.Since(start).Round(time.Second), report.String())
}

// credential matches what must not outlive an exercise: a JSON Web Token (a ServiceAccount's), a
// private key.
var credential = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.|PRIVATE KEY-----`)

// noCredentialLeft checks what an exercise's own clean-up leaves: no credential in the answers'
// directory, none in the node's home (where the READMEs copy files with minikube cp).
func (r *rehearsal) noCredentialLeft(e checks.Exercise) {
	t := r.t
	t.Helper()
	dir := filepath.Join(r.root, "examples", "workshop", "answers")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, entry := range entries {
		if data, err := os.ReadFile(filepath.Join(dir, entry.Name())); err == nil {
			assert.False(t, credential.Match(data), "exercise %d's commands leave a credential in answers/%s: its README's clean-up removes it", e.Number, entry.Name())
		}
	}
	if e.Offline {
		return
	}
	cmd := exec.Command("minikube", "ssh", "--", "sudo grep -rlE '"+credential.String()+"' /home/docker 2>/dev/null; true")
	cmd.Env, cmd.Dir = r.env, r.root
	out, err := cmd.Output()
	require.NoError(t, err, "minikube ssh: %s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "exercise %d's commands leave a credential in the node: its README's clean-up removes it", e.Number)
}

// nodeLogs are the last lines of the node's kubelet's journal, for a failure that happened under
// minikube.
func (r *rehearsal) nodeLogs() string {
	cmd := exec.Command("minikube", "ssh", "--", "sudo", "journalctl", "--unit", "kubelet", "--lines", "15", "--no-pager")
	cmd.Env, cmd.Dir = r.env, r.root
	out, err := cmd.Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return ""
	}
	return "\nthe node's kubelet's journal:\n  " + strings.Join(strings.Split(strings.TrimSpace(string(out)), "\n"), "\n  ")
}
