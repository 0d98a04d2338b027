package checks

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// checkCoding runs a coding exercise's test, by name, against the attendee's code, and passes
// only when go test says that very test passed, from the test file as the workshop wrote it (its
// SHA-256 is sum): a test file deleted or edited, a test renamed or skipped, or "no tests to run"
// fail, each saying so (go test alone exits 0 on all of them but the edit). Any other test file in
// the exercise's package fails too: it is built into the same test binary.
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
		// init() or a TestMain can change the test's setup or print go test's framing itself.
		others, err := otherTestFiles(env.Root, dir, file)
		if err != nil {
			return r, err
		}
		if len(others) > 0 {
			r.missing("the exercise's test run as the workshop wrote it: %s in its package is another test file, built into the same test binary (an init() or a TestMain there could change how the test runs); the check refuses it: move your tests elsewhere or delete them (rm %s)",
				strings.Join(others, ", "), strings.Join(others, " "))
			return r, nil
		}
		cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^"+test+"$", "-v", "-json", "./examples/workshop/"+dir+"/")
		cmd.Dir = env.Root
		cmd.Env = append(os.Environ(), "WORKSHOP_EXERCISE=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return r, fmt.Errorf("go test ./examples/workshop/%s/: %w", dir, err)
		}
		if missing := testVerdict(test, path, out, stderr.Bytes(), err == nil); missing != "" {
			r.missing("%s\n    (the whole output: WORKSHOP_EXERCISE=1 go test -run '^%s$' -v ./examples/workshop/%s/)", missing, test, dir)
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

// testEvent is a line of go test -json (cmd/test2json).
type testEvent struct {
	Action string
	Test   string
	Output string
}

// testVerdict reads go test -json's events for the run of one test, from file: "" when exactly
// that test passed (none of its subtests failed or skipped, and go test succeeded), else what is
// missing, and why.
func testVerdict(test, file string, stdout, stderr []byte, succeeded bool) string {
	var passed, failed bool
	var skipped, said, logged, all []string
	scanner := bufio.NewScanner(bytes.NewReader(stdout))
	scanner.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		var e testEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil || e.Action == "" {
			all = append(all, scanner.Text()) // not an event: the go command's own words
			continue
		}
		line := strings.TrimRight(e.Output, "\n")
		if line != "" {
			all = append(all, line)
		}
		if e.Test != test && !strings.HasPrefix(e.Test, test+"/") {
			continue
		}
		switch e.Action {
		case "pass":
			passed = passed || e.Test == test
		case "fail":
			failed = true
		case "skip":
			skipped = append(skipped, e.Test)
		case "output":
			// The assertions' own messages say what is wrong; testify prints them as "Messages:".
			if _, msg, ok := strings.Cut(line, "Messages:"); ok {
				said = append(said, strings.TrimSpace(msg))
			}
			// t.Log, t.Skip and t.Error lines: "    file_test.go:22: text".
			if t := strings.TrimSpace(line); strings.Contains(t, ".go:") && !strings.HasPrefix(t, "---") && !strings.HasPrefix(t, "===") {
				logged = append(logged, t)
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(stderr)), "\n") {
		if line != "" {
			all = append(all, line)
		}
	}
	last := func(lines []string, n int) string { return strings.Join(lines[max(0, len(lines)-n):], "\n      ") }
	output := strings.Join(all, "\n")
	switch {
	case failed || (passed && !succeeded):
		if len(said) > 0 {
			return "the exercise's test to pass; it says:\n      " + last(said, len(said))
		}
		return "the exercise's test to pass; it says:\n      " + last(all, 8)
	case len(skipped) > 0:
		// A skip proves nothing: the test, or a case of it, did not run.
		return fmt.Sprintf("the exercise's test to pass, not skip: %s skipped; it says:\n      %s", strings.Join(skipped, ", "), last(logged, 8))
	case passed:
		return ""
	case strings.Contains(output, "[no test files]"):
		return fmt.Sprintf("the exercise's test to pass: go test found no test file, so %s did not run (restore it: git checkout -- %s)", test, file)
	case strings.Contains(output, "no tests to run"):
		return fmt.Sprintf("the exercise's test to pass: go test found no test named %s (restore it: git checkout -- %s)", test, file)
	default:
		return "the exercise's test to pass; it says:\n      " + last(all, 8)
	}
}
