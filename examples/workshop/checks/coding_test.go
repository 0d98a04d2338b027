package checks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckCodingCannotBeFooled runs the coding checker on a module of its own, whose exercise
// is done, undone, or its test deleted, renamed or skipped: only a run in which the named test
// itself passed is a PASS (go test alone exits 0 on a deleted, renamed or skipped test).
func TestCheckCodingCannotBeFooled(t *testing.T) {
	const exercise = "package ex\n\nfunc Answer() int { return 42 }\n"
	// test is the exercise's test file, with body as TestAnswer's body after its own guard.
	test := func(name, body string) string {
		return "package ex\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nvar _ = os.Getenv\n\n" +
			"func " + name + "(t *testing.T) {\n" +
			"\tif os.Getenv(\"WORKSHOP_EXERCISE\") == \"\" {\n\t\tt.Skip(\"workshop exercise: make check runs this test\")\n\t}\n" +
			body + "}\n"
	}
	tests := []struct {
		name  string
		files map[string]string
		want  string // in what is missing; "" for a PASS
	}{
		{"the test passes", map[string]string{"ex_test.go": test("TestAnswer", "\tif Answer() != 42 {\n\t\tt.Error(\"not 42\")\n\t}\n")}, ""},
		{"the test fails", map[string]string{"ex_test.go": test("TestAnswer", "\tt.Error(\"Messages: Answer is not 43\")\n")},
			"the exercise's test to pass; it says:\n      Answer is not 43"},
		{"the test skips", map[string]string{"ex_test.go": test("TestAnswer", "\tt.Skip(\"later\")\n")},
			"the exercise's test to pass, not skip: TestAnswer skipped; it says:\n      ex_test.go:14: later"},
		{"a case of the test skips", map[string]string{"ex_test.go": test("TestAnswer", "\tt.Run(\"one\", func(t *testing.T) { t.Skip(\"later\") })\n")},
			"not skip: TestAnswer/one skipped"},
		{"the test file is deleted", nil,
			"go test found no test file, so TestAnswer did not run (restore it: git checkout -- examples/workshop/ex/ex_test.go)"},
		{"the test is renamed", map[string]string{"ex_test.go": test("TestOther", "")},
			"go test found no test named TestAnswer (restore it: git checkout -- examples/workshop/ex/ex_test.go)"},
		{"another test of the same prefix passes", map[string]string{"ex_test.go": test("TestAnswerLater", "")},
			"go test found no test named TestAnswer"},
		{"TestMain runs nothing", map[string]string{"ex_test.go": test("TestAnswer", "") + "\nfunc TestMain(m *testing.M) { os.Exit(0) }\n"},
			"the exercise's test to pass; it says:"},
		{"the test does not compile", map[string]string{"ex_test.go": test("TestAnswer", "\tundefined()\n")},
			"the exercise's test to pass; it says:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "examples", "workshop", "ex")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/workshop\n\ngo 1.26\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ex.go"), []byte(exercise), 0o644))
			for name, text := range tt.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
			}
			t.Setenv("GOFLAGS", "") // the module of its own, as it is
			r, err := checkCoding("ex", "ex_test.go", "TestAnswer")(context.Background(), Env{Root: root})
			require.NoError(t, err)
			if tt.want == "" {
				assert.True(t, r.Passed(), "missing: %v", r.Missing)
				return
			}
			require.False(t, r.Passed(), "a PASS for %s", tt.name)
			missing := strings.Join(r.Missing, "\n")
			assert.Contains(t, missing, tt.want)
			assert.Contains(t, missing, "(the whole output: WORKSHOP_EXERCISE=1 go test -run '^TestAnswer$' -v ./examples/workshop/ex/)")
		})
	}
}
