package checks

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// testFileSums are the SHA-256 sums of the coding exercises' test files as the workshop wrote
// them (line endings as LF): the checker runs the test as written, not as edited to pass.
// TestExerciseTestFileSums says the new sum when a test file changes.
var testFileSums = map[string]string{
	"12-toy-remove/remove_test.go":           "0aefba6c18e2c036eef053a93243c40463ca06db87ba0b967c43b553773c4040",
	"13-toy-namespace-filter/filter_test.go": "3f19f675278e576a56fd325df8ec24155c6770c23e9165eb48edd896a620e045",
}

// fileSum is the SHA-256 of a file's text with CRLF line endings read as LF (git on Windows may
// check files out with CRLF).
func fileSum(data []byte) string {
	sum := sha256.Sum256(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// checkCoding runs a coding exercise's test, by name, against the attendee's code, from the test
// file as the workshop wrote it (its SHA-256 is sum), and passes only on the checker's own word
// that the test ran to its end and passed — never on what the test binary prints or its exit
// status, which the attendee's package can forge.
//
// How: the checker builds the test binary itself (go test -c) with a go command it sets up —
// settings that choose no code (buildEnv), go.mod and go.sum as committed (moduleFiles) — and
// adds, through an overlay of its own, a test file it writes: a test with a random name that runs
// the exercise's test as a subtest and, only when that returned without failing or skipping,
// writes a random nonce into a file in the checker's private temporary directory. Name, nonce and
// path are in that source alone, which is gone before the binary runs: nothing the attendee's
// package says (go test's framing or -json events printed by an init(), an os.Exit(0)) can make
// the file hold the nonce. Code in the same process could still dig the nonce out of its own
// executable; that is writing an attack on the checker, not skipping the exercise. The checker
// trusts the go command on PATH, its module and build caches: what it controls is what that go
// command is asked to build.
//
// A test file deleted or edited, a test renamed or skipped, fail, each saying so. Any other test
// file in the exercise's package fails too: it is built into the same test binary.
func checkCoding(dir, file, test, sum string) func(context.Context, Env) (Result, error) {
	return func(ctx context.Context, env Env) (Result, error) {
		var r Result
		path := "examples/workshop/" + dir + "/" + file
		data, err := os.ReadFile(filepath.Join(env.Root, filepath.FromSlash(path)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.missing("the exercise's test to pass: its file %s is gone (restore it: git checkout -- %s)", path, path)
			return r, nil
		case err != nil:
			return r, err
		case fileSum(data) != sum:
			r.missing("the exercise's test as the workshop wrote it: %s has been edited, and the check runs it as written (restore it: git checkout -- %s; your code is in the other files)", path, path)
			return r, nil
		}
		// Another test file in the package would be compiled into the same test binary, where an
		// init() or a TestMain can change the test's setup.
		others, err := otherTestFiles(env.Root, dir, file)
		if err != nil {
			return r, err
		}
		if len(others) > 0 {
			r.missing("the exercise's test run as the workshop wrote it: %s in its package is another test file, built into the same test binary (an init() or a TestMain there could change how the test runs); the check refuses it: move your tests elsewhere or delete them (rm %s)",
				strings.Join(others, ", "), strings.Join(others, " "))
			return r, nil
		}
		src, err := parser.ParseFile(token.NewFileSet(), path, data, parser.SkipObjectResolution)
		if err != nil {
			r.missing("the exercise's test to pass: %s does not parse (restore it: git checkout -- %s): %v", path, path, err)
			return r, nil
		}
		if !declaresTest(src, test) {
			r.missing("the exercise's test to pass: %s has no test named %s (restore it: git checkout -- %s)", path, test, path)
			return r, nil
		}
		run, err := runExerciseTest(ctx, env, dir, src.Name.Name, test)
		if err != nil {
			return r, err
		}
		r.Notes = append(r.Notes, run.notes...)
		if missing := run.verdict(test); missing != "" {
			r.missing("%s\n    (the test alone, as go test runs it: WORKSHOP_EXERCISE=1 go test -run '^%s$' -v ./examples/workshop/%s/)", missing, test, dir)
		}
		return r, nil
	}
}

// otherTestFiles lists, as paths from the repository's root, the *_test.go files in the
// exercise's directory other than the workshop's own (file): go test builds every one of them
// into the package's test binary.
func otherTestFiles(root, dir, file string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "examples", "workshop", filepath.FromSlash(dir)))
	if err != nil {
		return nil, err
	}
	var others []string
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, "_test.go") && name != file {
			others = append(others, "examples/workshop/"+dir+"/"+name)
		}
	}
	return others, nil
}

// declaresTest says whether a test file declares func test(t *testing.T).
func declaresTest(f *ast.File, test string) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == test {
			return true
		}
	}
	return false
}

// exerciseRun is what the checker's own build and run of an exercise's test gave.
type exerciseRun struct {
	built  bool
	passed bool   // the hook wrote the nonce: the test returned, neither failed nor skipped
	output string // what the go command (built false) or the test binary printed, for the reasons
	exit   string // how the test binary ended
	hook   string // the hook's test name, in the binary's output before the exercise's test's
	notes  []string
}

// maxTestOutput bounds what the checker keeps of a build's or a test's output: enough for the
// reasons it quotes, not a flood.
const maxTestOutput = 1 << 20

// runExerciseTest builds the exercise's package's test binary with the checker's hook and runs
// the exercise's test through it (see checkCoding).
func runExerciseTest(ctx context.Context, env Env, dir, pkg, test string) (exerciseRun, error) {
	var run exerciseRun
	tmp, err := os.MkdirTemp("", "workshop-check-") // 0700: this user's alone
	if err != nil {
		return run, err
	}
	defer os.RemoveAll(tmp)
	pkgDir := filepath.Join(env.Root, "examples", "workshop", filepath.FromSlash(dir))
	hookName := "TestWorkshopCheck" + random(8)
	run.hook = hookName
	nonce := random(32)
	result := filepath.Join(tmp, "result")

	goEnv, notes, err := buildEnv(ctx, env.Root)
	if err != nil {
		return run, err
	}
	run.notes = append(run.notes, notes...)
	modFile, notes, err := moduleFiles(ctx, env.Root, tmp)
	if err != nil {
		return run, err
	}
	run.notes = append(run.notes, notes...)

	hook := filepath.Join(tmp, "hook.go")
	if err := os.WriteFile(hook, []byte(hookSource(pkg, hookName, test, result, nonce)), 0o600); err != nil {
		return run, err
	}
	replace := map[string]string{filepath.Join(pkgDir, "zz_workshop_check_test.go"): hook}
	for dst, src := range env.attendeeCode {
		if filepath.Dir(dst) != pkgDir || strings.HasSuffix(dst, "_test.go") {
			return run, fmt.Errorf("attendeeCode: %s is no file of the exercise's own in %s", dst, pkgDir)
		}
		replace[dst] = src
	}
	overlay := filepath.Join(tmp, "overlay.json")
	data, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return run, err
	}
	if err := os.WriteFile(overlay, data, 0o600); err != nil {
		return run, err
	}
	binary := filepath.Join(tmp, "exercise.test")
	if runtime.GOOS == "windows" {
		binary += ".exe"
	}
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", binary, "-overlay="+overlay, "-modfile="+modFile, "./examples/workshop/"+dir+"/")
	build.Dir, build.Env = env.Root, goEnv
	out, err := build.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return run, fmt.Errorf("go test -c ./examples/workshop/%s/: %w", dir, err)
	}
	if err != nil {
		run.output = bounded(out)
		return run, nil
	}
	run.built = true
	// The name, the nonce and the path are in the binary alone from here on.
	for _, f := range []string{hook, overlay} {
		if err := os.Remove(f); err != nil {
			return run, err
		}
	}

	cmd := exec.CommandContext(ctx, binary, "-test.run=^"+hookName+"$", "-test.v", "-test.paniconexit0", "-test.timeout=5m")
	cmd.Dir = pkgDir
	cmd.Env = append(os.Environ(), "WORKSHOP_EXERCISE=1")
	out, err = cmd.CombinedOutput()
	run.output = bounded(out)
	switch {
	case err == nil:
		run.exit = "exit status 0"
	case errors.As(err, &exit):
		run.exit = exit.String()
	default:
		return run, fmt.Errorf("run the test binary of ./examples/workshop/%s/: %w", dir, err)
	}
	said, err := os.ReadFile(result)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return run, err
	}
	run.passed = string(said) == nonce
	return run, nil
}

// hookSource is the checker's test file in the exercise's package (pkg): hookName runs test as a
// subtest and writes nonce into result only when test returned, neither failed nor skipped (a
// skip, a t.FailNow or a runtime.Goexit never reach the line after the call). The imports are
// renamed: the package may have identifiers named os or testing.
func hookSource(pkg, hookName, test, result, nonce string) string {
	return fmt.Sprintf(`package %[1]s

import (
	%[2]sos "os"
	%[2]stesting "testing"
)

func %[3]s(t *%[2]stesting.T) {
	finished := false
	t.Run(%[4]q, func(t *%[2]stesting.T) {
		%[4]s(t)
		finished = true
	})
	if finished && !t.Failed() {
		if err := %[2]sos.WriteFile(%[5]q, []byte(%[6]q), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
`, pkg, "workshop"+random(4), hookName, test, result, nonce)
}

// random is n random bytes in hex.
func random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on the systems Go supports
	}
	return hex.EncodeToString(b)
}

func bounded(out []byte) string {
	if len(out) > maxTestOutput {
		out = out[len(out)-maxTestOutput:]
	}
	return string(out)
}

// Settings of the go command that a room needs (a module mirror, its checksum database, caches,
// the toolchain, the build configuration) and that choose no code: the checker passes them on
// from the attendee's environment and `go env -w` (GOENV). All others — GOFLAGS beyond keptFlags,
// GOWORK, GOROOT, a cache program, the C toolchain (CC and the CGO_ flags run or link code of the
// user's choice) — are left at the go command's defaults.
var keptSettings = []string{
	"GOPROXY", "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "GOSUMDB", "GOINSECURE", "GOAUTH", "GOVCS",
	"GOCACHE", "GOMODCACHE", "GOPATH", "GOTMPDIR", "GOTOOLCHAIN", "GOTELEMETRY", "GOTELEMETRYDIR",
	"CGO_ENABLED", "GOAMD64", "GOARM", "GOARM64", "GO386", "GOMIPS", "GOMIPS64", "GOPPC64", "GORISCV64", "GOWASM",
	"GOEXPERIMENT", "GODEBUG",
}

// keptFlags are the GOFLAGS that stay: how go.mod may be treated (a room's mirror may need
// -mod=mod), the module cache's permissions, VCS stamping, paths, parallelism, verbosity. Not
// -overlay, -modfile, -exec, -toolexec, -ldflags, -gcflags, -tags, -mod=vendor…: each can swap or
// change the code that is built or run.
var keptFlags = map[string]func(value string) bool{
	"mod":        func(v string) bool { return v == "mod" || v == "readonly" },
	"modcacherw": func(v string) bool { return v == "" || v == "true" },
	"buildvcs":   func(string) bool { return true },
	"trimpath":   func(v string) bool { return v == "" || v == "true" },
	"p":          func(string) bool { return true },
	"v":          func(string) bool { return true },
	"x":          func(string) bool { return true },
}

// buildEnv is the environment of the checker's go command: the attendee's, with every go setting
// replaced by keptSettings' values (read through go env, so that `go env -w` counts), GOFLAGS
// cut to keptFlags (-mod=readonly unless -mod=mod is kept), no GOENV file, no go.work. The notes
// say what was left out.
func buildEnv(ctx context.Context, root string) ([]string, []string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "-json")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go env -json: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var settings map[string]string
	if err := json.Unmarshal(out, &settings); err != nil {
		return nil, nil, fmt.Errorf("go env -json: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		if _, isGo := settings[key]; isGo || key == "GOENV" || key == "GOWORK" || key == "GOFLAGS" || key == "GOROOT" || strings.HasPrefix(key, "CGO_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOENV=off", "GOWORK=off")
	for _, key := range keptSettings {
		if v := settings[key]; v != "" {
			env = append(env, key+"="+v)
		}
	}
	flags, dropped := goFlags(settings["GOFLAGS"])
	env = append(env, "GOFLAGS="+strings.Join(flags, " "))
	var notes []string
	if len(dropped) > 0 {
		notes = append(notes, fmt.Sprintf("GOFLAGS (your environment or go env -w): %s left out — the check builds the workshop's test as written, and each of these can change what is built or run", strings.Join(dropped, " ")))
	}
	return env, notes, nil
}

// goFlags cuts GOFLAGS to keptFlags, and says what it left out.
func goFlags(goflags string) (kept, dropped []string) {
	mod := false
	for _, f := range splitQuoted(goflags) {
		name, value, hasValue := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if ok, known := keptFlags[name]; known && strings.HasPrefix(f, "-") && (ok(value) || !hasValue && ok("")) {
			kept = append(kept, f)
			mod = mod || name == "mod"
			continue
		}
		dropped = append(dropped, f)
	}
	if !mod {
		kept = append(kept, "-mod=readonly") // not the vendor directory's copies, were there one
	}
	return kept, dropped
}

// splitQuoted splits GOFLAGS as the go command does: at spaces, a value in '…' or "…" whole.
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	started := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, started = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}

// moduleFiles writes into dir the go.mod and go.sum the checker builds with, and returns the
// go.mod's path (for -modfile): the repository's as committed (git show HEAD:./go.mod), so that
// a replace, a require or a go.sum line changed since does not change what the test links
// against. Without git's answer (no git, not a checkout) the working tree's, and then a replace by
// a directory — code of the attendee's choice in a dependency's place — is refused.
func moduleFiles(ctx context.Context, root, dir string) (string, []string, error) {
	var notes []string
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "safe.directory=*", "-C", root}, args...)...)
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") })
		return cmd.Output()
	}
	mod, err := git("show", "HEAD:./go.mod")
	var sum []byte
	if err == nil {
		// A module without dependencies has no go.sum.
		if _, absent := git("cat-file", "-e", "HEAD:./go.sum"); absent == nil {
			sum, err = git("show", "HEAD:./go.sum")
		}
	}
	fromGit := err == nil
	if !fromGit {
		notes = append(notes, "go.mod and go.sum as they are in your checkout: git could not show them as committed")
		if mod, err = os.ReadFile(filepath.Join(root, "go.mod")); err != nil {
			return "", nil, err
		}
		if sum, err = os.ReadFile(filepath.Join(root, "go.sum")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", nil, err
		}
	} else if now, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil && !bytes.Equal(now, mod) {
		notes = append(notes, "go.mod has changes the check does not build with (git diff go.mod): it uses go.mod and go.sum as committed")
	}
	f, err := modfile.Parse("go.mod", mod, nil)
	if err != nil {
		return "", nil, fmt.Errorf("go.mod: %w", err)
	}
	if !fromGit {
		for _, r := range f.Replace {
			if r.New.Version == "" {
				return "", nil, fmt.Errorf("go.mod replaces %s by the directory %s: the check builds the exercises against the modules go.sum names (restore go.mod: git checkout -- go.mod)", r.Old.Path, r.New.Path)
			}
		}
	}
	path := filepath.Join(dir, "go.mod")
	if err := os.WriteFile(path, mod, 0o600); err != nil {
		return "", nil, err
	}
	return path, notes, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o600)
}

// The test binary's -test.v lines the reasons quote.
var (
	skipLine = regexp.MustCompile(`(?m)^\s*--- SKIP: (\S+)`)
	failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
)

// verdict says what is missing after the run ("" when nothing is): from the checker's own
// evidence whether the test passed; what the output says only explains a failure, or fails a pass
// (a case of the test that skipped) — output can never make a pass.
func (run exerciseRun) verdict(test string) string {
	// The hook's name is the checker's, not the attendee's: the test as the attendee knows it.
	out := run.output
	if run.hook != "" {
		out = strings.ReplaceAll(out, run.hook+"/", "")
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := func(ls []string, n int) string { return strings.Join(ls[max(0, len(ls)-n):], "\n      ") }
	if !run.built {
		return "the exercise's test to pass; it does not build:\n      " + last(lines, 12)
	}
	var said, logged, skipped []string
	for _, l := range lines {
		// The assertions' own messages say what is wrong; testify prints them as "Messages:".
		if _, msg, ok := strings.Cut(l, "Messages:"); ok {
			said = append(said, strings.TrimSpace(msg))
		}
		// t.Log, t.Skip and t.Error lines: "    file_test.go:22: text".
		if t := strings.TrimSpace(l); strings.Contains(t, ".go:") && !strings.HasPrefix(t, "---") && !strings.HasPrefix(t, "===") {
			logged = append(logged, t)
		}
	}
	for _, m := range skipLine.FindAllStringSubmatch(out, -1) {
		if m[1] == test || strings.HasPrefix(m[1], test+"/") {
			skipped = append(skipped, m[1])
		}
	}
	switch {
	case len(skipped) > 0:
		// A skip proves nothing: the test, or a case of it, did not run.
		return fmt.Sprintf("the exercise's test to pass, not skip: %s skipped; it says:\n      %s", strings.Join(skipped, ", "), last(logged, 8))
	case run.passed:
		return ""
	case len(said) > 0:
		return "the exercise's test to pass; it says:\n      " + last(said, len(said))
	case failLine.MatchString(out):
		return "the exercise's test to pass; it says:\n      " + last(lines, 8)
	default:
		return fmt.Sprintf("the exercise's test to pass: it did not run to its end — the test binary ended (%s) before %s returned; something in the package ended it (an os.Exit, a panic, an init()?). It printed:\n      %s", run.exit, test, last(lines, 8))
	}
}
