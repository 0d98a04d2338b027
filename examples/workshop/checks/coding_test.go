package checks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckCodingCannotBeFooled runs the coding checker on a module of its own, whose exercise
// is done, undone, or its test deleted, edited, renamed or skipped: only a run of the test file
// as written in which the named test itself passed is a PASS (go test alone exits 0 on a
// deleted, renamed or skipped test), and another test file beside it (its TestMain or init() in
// the same test binary) is refused. Each case's ex_test.go is the one "the workshop wrote" (its
// sum is the checker's), but for the edited one.
func TestCheckCodingCannotBeFooled(t *testing.T) {
	const exercise = "package ex\n\nfunc Answer() int { return 42 }\n"
	const goMod = "module example.com/workshop\n\ngo 1.21\n" // any toolchain since 1.21 builds it: none is downloaded
	// test is the exercise's test file, with body as TestAnswer's body after its own guard.
	test := func(name, body string) string {
		return "package ex\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nvar _ = os.Getenv\n\n" +
			"func " + name + "(t *testing.T) {\n" +
			"\tif os.Getenv(\"WORKSHOP_EXERCISE\") == \"\" {\n\t\tt.Skip(\"workshop exercise: make check runs this test\")\n\t}\n" +
			body + "}\n"
	}
	failing := test("TestAnswer", "\tt.Error(\"Messages: not yet\")\n")
	otherFile := func(name string) string {
		return "the exercise's test run as the workshop wrote it: examples/workshop/ex/" + name + " in its package is another test file, built into the same test binary (an init() or a TestMain there could change how the test runs); the check refuses it: move your tests elsewhere or delete them (rm examples/workshop/ex/" + name + ")"
	}
	tests := []struct {
		name  string
		files map[string]string
		want  string // in what is missing; "" for a PASS
		// edited: the workshop wrote a test that fails; the file was edited into files' after.
		edited bool
	}{
		{"the test passes", map[string]string{"ex_test.go": test("TestAnswer", "\tif Answer() != 42 {\n\t\tt.Error(\"not 42\")\n\t}\n")}, "", false},
		{"the test fails", map[string]string{"ex_test.go": test("TestAnswer", "\tt.Error(\"Messages: Answer is not 43\")\n")},
			"the exercise's test to pass; it says:\n      Answer is not 43", false},
		{"the test skips", map[string]string{"ex_test.go": test("TestAnswer", "\tt.Skip(\"later\")\n")},
			"the exercise's test to pass, not skip: TestAnswer skipped; it says:\n      ex_test.go:14: later", false},
		{"a case of the test skips", map[string]string{"ex_test.go": test("TestAnswer", "\tt.Run(\"one\", func(t *testing.T) { t.Skip(\"later\") })\n")},
			"not skip: TestAnswer/one skipped", false},
		{"the test file is deleted", nil,
			"the exercise's test to pass: its file examples/workshop/ex/ex_test.go is gone (restore it: git checkout -- examples/workshop/ex/ex_test.go)", false},
		{"the test is edited to pass", map[string]string{"ex_test.go": test("TestAnswer", "")},
			"the exercise's test as the workshop wrote it: examples/workshop/ex/ex_test.go has been edited, and the check runs it as written (restore it: git checkout -- examples/workshop/ex/ex_test.go; your code is in the other files)", true},
		{"only its line endings differ (git on Windows)", map[string]string{"ex_test.go": strings.ReplaceAll(test("TestAnswer", ""), "\n", "\r\n")}, "", false},
		{"the test is renamed", map[string]string{"ex_test.go": test("TestOther", "")},
			"go test found no test named TestAnswer (restore it: git checkout -- examples/workshop/ex/ex_test.go)", false},
		{"another test of the same prefix passes", map[string]string{"ex_test.go": test("TestAnswerLater", "")},
			"go test found no test named TestAnswer", false},
		{"TestMain runs nothing", map[string]string{"ex_test.go": test("TestAnswer", "") + "\nfunc TestMain(m *testing.M) { os.Exit(0) }\n"},
			"the exercise's test to pass; it says:", false},
		{"the test does not compile", map[string]string{"ex_test.go": test("TestAnswer", "\tundefined()\n")},
			"the exercise's test to pass; it says:", false},
		// Another test file in the package is built into the same test binary: its TestMain can
		// print go test's framing itself, its init() can change what the test sees.
		{"another test file's TestMain prints a pass", map[string]string{"ex_test.go": failing,
			"main_test.go": "package ex\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\n" +
				"func TestMain(m *testing.M) {\n\tfmt.Print(\"\\x16=== RUN   TestAnswer\\n\\x16--- PASS: TestAnswer (0.00s)\\n\\x16PASS\\n\")\n\tos.Exit(0)\n}\n"},
			otherFile("main_test.go"), false},
		{"another test file's init() sets up the test", map[string]string{"ex_test.go": test("TestAnswer", "\tif answer != 42 {\n\t\tt.Error(\"not 42\")\n\t}\n") + "\nvar answer = 41\n",
			"setup_test.go": "package ex\n\nfunc init() { answer = 42 }\n"},
			otherFile("setup_test.go"), false},
		{"an external test package beside it", map[string]string{"ex_test.go": test("TestAnswer", ""),
			"more_test.go": "package ex_test\n\nimport \"testing\"\n\nfunc TestMore(t *testing.T) {}\n"},
			otherFile("more_test.go"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "examples", "workshop", "ex")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte(goMod), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ex.go"), []byte(exercise), 0o644))
			sum := ""
			for name, text := range tt.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
				if name == "ex_test.go" { // the workshop's own
					sum = fileSum([]byte(strings.ReplaceAll(text, "\r\n", "\n")))
				}
			}
			if tt.edited {
				sum = fileSum([]byte(test("TestAnswer", "\tt.Error(\"not yet\")\n")))
			}
			t.Setenv("GOFLAGS", "") // the module of its own, as it is
			r, err := checkCoding("ex", "ex_test.go", "TestAnswer", sum)(context.Background(), Env{Root: root})
			require.NoError(t, err)
			if tt.want == "" {
				assert.True(t, r.Passed(), "missing: %v", r.Missing)
				return
			}
			require.False(t, r.Passed(), "a PASS for %s", tt.name)
			missing := strings.Join(r.Missing, "\n")
			assert.Contains(t, missing, tt.want)
			if tt.files != nil && !tt.edited && len(tt.files) == 1 { // go test ran
				assert.Contains(t, missing, "(the whole output: WORKSHOP_EXERCISE=1 go test -run '^TestAnswer$' -v ./examples/workshop/ex/)")
			}
		})
	}
}

// The checker's sums are those of the exercises' test files: a maintainer who changes a test
// file updates its sum here (the failure says the new one).
func TestExerciseTestFileSums(t *testing.T) {
	coding := 0
	for _, e := range Exercises {
		if !e.Coding() {
			continue
		}
		coding++
		files, err := filepath.Glob(filepath.Join(root, "examples", "workshop", e.Name, "*_test.go"))
		require.NoError(t, err)
		require.Len(t, files, 1, "%s has one test file", e.Name)
		data, err := os.ReadFile(files[0])
		require.NoError(t, err)
		key := e.Name + "/" + filepath.Base(files[0])
		assert.Equal(t, testFileSums[key], fileSum(data), "testFileSums[%q] in coding.go", key)
	}
	assert.Len(t, testFileSums, coding, "a sum for each coding exercise, and no other")
}

// testVerdict on go test -json's own words for what the module cases above cannot make: a test
// file go test does not see (a build constraint), a skip with its reason.
func TestTestVerdict(t *testing.T) {
	const file = "examples/workshop/ex/ex_test.go"
	event := func(action, test, output string) string {
		data, err := json.Marshal(testEvent{Action: action, Test: test, Output: output})
		require.NoError(t, err)
		return string(data) + "\n"
	}
	tests := []struct {
		name, stdout string
		succeeded    bool
		want         string
	}{
		{"passed", event("run", "TestAnswer", "") + event("pass", "TestAnswer", "") + event("pass", "", ""), true, ""},
		{"no test files", event("output", "", "?   \texample.com/workshop/examples/workshop/ex\t[no test files]\n") + event("skip", "", ""), true,
			"go test found no test file, so TestAnswer did not run (restore it: git checkout -- " + file + ")"},
		{"no tests to run", event("output", "", "testing: warning: no tests to run\n") + event("pass", "", ""), true,
			"go test found no test named TestAnswer"},
		{"a pass, but go test failed", event("pass", "TestAnswer", "") + event("fail", "", ""), false, "the exercise's test to pass"},
		{"a subtest's pass is not the test's", event("pass", "TestAnswer/one", "") + event("pass", "", ""), true, "the exercise's test to pass"},
		{"skipped, with its reason", event("output", "TestAnswer", "    ex_test.go:14: later\n") + event("output", "TestAnswer", "--- SKIP: TestAnswer (0.00s)\n") + event("skip", "TestAnswer", ""), true,
			"not skip: TestAnswer skipped; it says:\n      ex_test.go:14: later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := testVerdict("TestAnswer", file, []byte(tt.stdout), nil, tt.succeeded)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tt.want)
		})
	}
}
