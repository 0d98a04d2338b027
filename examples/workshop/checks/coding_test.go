package checks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codingModule is a module of its own for the coding checker: the exercise "ex" (Answer, which
// the attendee is to make return 42) with its test, the workshop's, which asks a dependency
// (example.com/lib, replaced by ./lib) whether the answer is right — the part an attacker would
// swap, as testify is for the real exercises. fakelib is the same module saying yes to anything.
type codingModule struct {
	t    *testing.T
	root string
	dir  string // examples/workshop/ex
	sum  string // the SHA-256 of ex_test.go as "the workshop wrote it"
}

const (
	codingGoMod = "module example.com/workshop\n\ngo 1.21\n\nrequire example.com/lib v0.0.0\n\nreplace example.com/lib => ./lib\n" // any toolchain since 1.21 builds it: none is downloaded
	fakeGoMod   = "module example.com/workshop\n\ngo 1.21\n\nrequire example.com/lib v0.0.0\n\nreplace example.com/lib => ./fakelib\n"
	libGo       = "package lib\n\n// Right says whether got is want.\nfunc Right(got, want int) bool { return got == want }\n"
	fakeLibGo   = "package lib\n\n// Right says yes.\nfunc Right(got, want int) bool { return true }\n"
	// exTest is the workshop's test; failing is a test file that always fails, passing one that
	// always passes (what an attacker would put in its place).
	exTest = "package ex\n\nimport (\n\t\"os\"\n\t\"testing\"\n\n\t\"example.com/lib\"\n)\n\n" +
		"func TestAnswer(t *testing.T) {\n" +
		"\tif os.Getenv(\"WORKSHOP_EXERCISE\") == \"\" {\n\t\tt.Skip(\"workshop exercise: make check runs this test\")\n\t}\n" +
		"\tif !lib.Right(Answer(), 42) {\n\t\tt.Error(\"Messages: Answer is not 42\")\n\t}\n}\n"
	passingTest = "package ex\n\nimport \"testing\"\n\nfunc TestAnswer(t *testing.T) {}\n"
	notDone     = "package ex\n\nfunc Answer() int { return 41 }\n"
	done        = "package ex\n\nfunc Answer() int { return 42 }\n"
	// withInit is the exercise not done, with an init() to come.
	withInit = "package ex\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc Answer() int { return 41 }\n\nfunc init() {\n"
)

// newCodingModule writes the module, with the exercise's code (ex.go) as given, and commits it
// (git: the checker builds with go.mod as committed).
func newCodingModule(t *testing.T, exercise string) *codingModule {
	m := &codingModule{t: t, root: t.TempDir()}
	m.dir = filepath.Join(m.root, "examples", "workshop", "ex")
	m.write("go.mod", codingGoMod)
	m.write("lib/go.mod", "module example.com/lib\n\ngo 1.21\n")
	m.write("lib/lib.go", libGo)
	m.write("fakelib/go.mod", "module example.com/lib\n\ngo 1.21\n")
	m.write("fakelib/lib.go", fakeLibGo)
	m.write("examples/workshop/ex/ex.go", exercise)
	m.write("examples/workshop/ex/ex_test.go", exTest)
	m.sum = fileSum([]byte(exTest))
	m.git("init", "-q")
	m.git("add", "-A")
	m.git("-c", "user.name=workshop", "-c", "user.email=workshop@example.com", "commit", "-q", "-m", "the workshop")
	return m
}

func (m *codingModule) write(name, content string) {
	path := filepath.Join(m.root, filepath.FromSlash(name))
	require.NoError(m.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(m.t, os.WriteFile(path, []byte(content), 0o755))
}

func (m *codingModule) git(args ...string) {
	cmd := exec.Command("git", append([]string{"-C", m.root}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(m.t, err, "git %v: %s", args, out)
}

func (m *codingModule) check() Result {
	r, err := checkCoding("ex", "ex_test.go", "TestAnswer", m.sum)(context.Background(), Env{Root: m.root})
	require.NoError(m.t, err)
	return r
}

// clearGoEnv leaves the go command's settings to this test: no GOFLAGS or GOWORK of the machine,
// no go env -w file.
func clearGoEnv(t *testing.T) {
	for _, k := range []string{"GOFLAGS", "GOWORK"} {
		t.Setenv(k, "")
	}
	t.Setenv("GOENV", "off")
}

// TestCheckCodingCannotBeFooled runs the coding checker on a module of its own, whose exercise
// is done, undone, or its test deleted, edited, renamed or skipped: only a run of the test file
// as written in which the named test itself passed is a PASS, and another test file beside it
// (its TestMain or init() in the same test binary) is refused.
func TestCheckCodingCannotBeFooled(t *testing.T) {
	otherFile := func(name string) string {
		return "the exercise's test run as the workshop wrote it: examples/workshop/ex/" + name + " in its package is another test file, built into the same test binary (an init() or a TestMain there could change how the test runs); the check refuses it: move your tests elsewhere or delete them (rm examples/workshop/ex/" + name + ")"
	}
	withTest := func(body string) string { // the workshop's test file with another body
		return strings.Replace(exTest, "\tif !lib.Right(Answer(), 42) {\n\t\tt.Error(\"Messages: Answer is not 42\")\n\t}\n", body, 1)
	}
	tests := []struct {
		name     string
		exercise string
		// test, when not "", is the test file "the workshop wrote" (its sum is the checker's).
		test  string
		after func(m *codingModule) // what changes after the workshop's commit
		want  string                // in what is missing; "" for a PASS
	}{
		{"done", done, "", nil, ""},
		{"not done", notDone, "", nil, "the exercise's test to pass; it says:\n      Answer is not 42"},
		{"the test skips", done, withTest("\tt.Skip(\"later\")\n\t_ = lib.Right\n"), nil,
			"the exercise's test to pass, not skip: TestAnswer skipped; it says:\n      ex_test.go:14: later"},
		{"a case of the test skips", done, withTest("\tt.Run(\"one\", func(t *testing.T) { t.Skip(\"later\") })\n\t_ = lib.Right\n"), nil,
			"not skip: TestAnswer/one skipped"},
		{"the test file is deleted", done, "", func(m *codingModule) { require.NoError(t, os.Remove(filepath.Join(m.dir, "ex_test.go"))) },
			"the exercise's test to pass: its file examples/workshop/ex/ex_test.go is gone (restore it: git checkout -- examples/workshop/ex/ex_test.go)"},
		{"the test is edited to pass", notDone, "", func(m *codingModule) { m.write("examples/workshop/ex/ex_test.go", passingTest) },
			"the exercise's test as the workshop wrote it: examples/workshop/ex/ex_test.go has been edited, and the check runs it as written (restore it: git checkout -- examples/workshop/ex/ex_test.go; your code is in the other files)"},
		{"only its line endings differ (git on Windows)", done, "",
			func(m *codingModule) {
				m.write("examples/workshop/ex/ex_test.go", strings.ReplaceAll(exTest, "\n", "\r\n"))
			}, ""},
		{"the test is renamed", done, strings.Replace(exTest, "TestAnswer", "TestOther", 1), nil,
			"has no test named TestAnswer (restore it: git checkout -- examples/workshop/ex/ex_test.go)"},
		{"another test of the same prefix", done, strings.Replace(exTest, "TestAnswer", "TestAnswerLater", 1), nil,
			"has no test named TestAnswer"},
		{"TestMain runs nothing", notDone, exTest + "\nfunc TestMain(m *testing.M) { os.Exit(0) }\n", nil,
			"the exercise's test to pass: it did not run to its end — the test binary ended (exit status 0) before TestAnswer returned"},
		{"the test does not compile", done, withTest("\tundefined()\n"), nil, "the exercise's test to pass; it does not build:"},
		// Another test file in the package is built into the same test binary.
		{"another test file's TestMain prints a pass", notDone, "", func(m *codingModule) {
			m.write("examples/workshop/ex/main_test.go", "package ex\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\n"+
				"func TestMain(m *testing.M) {\n\tfmt.Print(\"\\x16=== RUN   TestAnswer\\n\\x16--- PASS: TestAnswer (0.00s)\\n\\x16PASS\\n\")\n\tos.Exit(0)\n}\n")
		}, otherFile("main_test.go")},
		{"an external test package beside it", done, "", func(m *codingModule) {
			m.write("examples/workshop/ex/more_test.go", "package ex_test\n\nimport \"testing\"\n\nfunc TestMore(t *testing.T) {}\n")
		}, otherFile("more_test.go")},

		// Nothing written: the attendee's own package prints go test's framing and ends.
		{"an init() prints go test's framing and exits 0", withInit +
			"\tfmt.Print(\"\\x16=== RUN   TestAnswer\\n\\x16--- PASS: TestAnswer (0.00s)\\n\\x16PASS\\n=== RUN   TestAnswer\\n--- PASS: TestAnswer (0.00s)\\nPASS\\n\")\n\tos.Exit(0)\n}\n",
			"", nil, "the exercise's test to pass: it did not run to its end — the test binary ended (exit status 0) before TestAnswer returned"},
		{"an init() prints go test's -json events and exits 0", withInit +
			"\tfmt.Println(`{\"Action\":\"run\",\"Test\":\"TestAnswer\"}`)\n\tfmt.Println(`{\"Action\":\"pass\",\"Test\":\"TestAnswer\"}`)\n\tfmt.Println(`{\"Action\":\"pass\"}`)\n\tos.Exit(0)\n}\n",
			"", nil, "before TestAnswer returned"},
		{"the code exits 0 during the test", "package ex\n\nimport \"os\"\n\nfunc Answer() int { os.Exit(0); return 0 }\n", "", nil, "the exercise's test to pass"},

		// Nothing written: the go command swaps what is tested.
		{"GOFLAGS=-overlay puts a passing test in place of the workshop's", notDone, "", func(m *codingModule) {
			m.write("overlay/pass_test.go", passingTest)
			m.write("overlay.json", `{"Replace":{"`+filepath.Join(m.dir, "ex_test.go")+`":"`+filepath.Join(m.root, "overlay", "pass_test.go")+`"}}`)
			t.Setenv("GOFLAGS", "-overlay="+filepath.Join(m.root, "overlay.json"))
		}, "Answer is not 42"},
		{"go env -w GOFLAGS=-overlay (the GOENV file)", notDone, "", func(m *codingModule) {
			m.write("overlay/pass_test.go", passingTest)
			m.write("overlay.json", `{"Replace":{"`+filepath.Join(m.dir, "ex_test.go")+`":"`+filepath.Join(m.root, "overlay", "pass_test.go")+`"}}`)
			m.write("goenv", "GOFLAGS=-overlay="+filepath.Join(m.root, "overlay.json")+"\n")
			t.Setenv("GOENV", filepath.Join(m.root, "goenv"))
		}, "Answer is not 42"},
		{"GOFLAGS=-toolexec compiles another test file", notDone, "", func(m *codingModule) {
			m.write("overlay/pass_test.go", passingTest)
			m.write("swap.sh", "#!/bin/sh\ntool=\"$1\"; shift\nn=$#\nfor a do\n\tcase \"$a\" in *ex_test.go) a=\""+filepath.Join(m.root, "overlay", "pass_test.go")+"\";; esac\n\tset -- \"$@\" \"$a\"\ndone\nshift $n\nexec \"$tool\" \"$@\"\n")
			t.Setenv("GOFLAGS", "-toolexec="+filepath.Join(m.root, "swap.sh"))
		}, "Answer is not 42"},
		{"GOFLAGS=-exec runs a program that prints a pass", notDone, "", func(m *codingModule) {
			m.write("pass.sh", "#!/bin/sh\nprintf '\\026=== RUN   TestAnswer\\n\\026--- PASS: TestAnswer (0.00s)\\n\\026PASS\\n'\n")
			t.Setenv("GOFLAGS", "-exec="+filepath.Join(m.root, "pass.sh"))
		}, "Answer is not 42"},
		{"GOFLAGS=-modfile names a go.mod that replaces the dependency", notDone, "", func(m *codingModule) {
			m.write("alt.mod", fakeGoMod)
			t.Setenv("GOFLAGS", "-modfile="+filepath.Join(m.root, "alt.mod"))
		}, "Answer is not 42"},
		{"a go.work replaces the dependency", notDone, "", func(m *codingModule) {
			m.write("go.work", "go 1.21\n\nuse .\n\nreplace example.com/lib => ./fakelib\n")
		}, "Answer is not 42"},
		{"go.mod's replace edited after the commit", notDone, "", func(m *codingModule) { m.write("go.mod", fakeGoMod) },
			"Answer is not 42"},
		{"a vendor directory with another copy of the dependency", notDone, "", func(m *codingModule) {
			cmd := exec.Command("go", "mod", "vendor")
			cmd.Dir = m.root
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "go mod vendor: %s", out)
			m.write("vendor/example.com/lib/lib.go", fakeLibGo)
		}, "Answer is not 42"},

		// What a room's mirror needs stays.
		{"GOFLAGS=-mod=mod -modcacherw, and a proxy", done, "", func(*codingModule) {
			t.Setenv("GOFLAGS", "-mod=mod -modcacherw")
			t.Setenv("GOPROXY", "off")
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearGoEnv(t)
			m := newCodingModule(t, tt.exercise)
			if tt.test != "" {
				m.write("examples/workshop/ex/ex_test.go", tt.test)
				m.sum = fileSum([]byte(tt.test))
			}
			if tt.after != nil {
				tt.after(m)
			}
			expect(t, m.check(), tt.want, tt.name)
		})
	}
}

// What the checker left out of the go command's settings, it says; what a room's mirror needs, it
// keeps.
func TestGoFlags(t *testing.T) {
	for _, tc := range []struct {
		goflags       string
		kept, dropped []string
	}{
		{"", []string{"-mod=readonly"}, nil},
		{"-mod=mod -modcacherw -buildvcs=false", []string{"-mod=mod", "-modcacherw", "-buildvcs=false"}, nil},
		{"-overlay=/x.json -toolexec=/bin/x -exec=/bin/y -modfile=/alt.mod", []string{"-mod=readonly"}, []string{"-overlay=/x.json", "-toolexec=/bin/x", "-exec=/bin/y", "-modfile=/alt.mod"}},
		{"-mod=vendor '-ldflags=-X a.b=c' --tags=fake", []string{"-mod=readonly"}, []string{"-mod=vendor", "-ldflags=-X a.b=c", "--tags=fake"}},
		{"-trimpath -p=2", []string{"-trimpath", "-p=2", "-mod=readonly"}, nil},
	} {
		kept, dropped := goFlags(tc.goflags)
		assert.Equal(t, tc.kept, kept, tc.goflags)
		assert.Equal(t, tc.dropped, dropped, tc.goflags)
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

// The verdict on what the test binary printed: output explains a failure, or fails a pass (a
// skipped case), and never makes one.
func TestVerdict(t *testing.T) {
	const hook = "TestWorkshopCheck0123"
	tests := []struct {
		name string
		run  exerciseRun
		want string // "" passes
	}{
		{"the hook's word", exerciseRun{built: true, passed: true, hook: hook, output: "=== RUN   " + hook + "\n=== RUN   " + hook + "/TestAnswer\n--- PASS: " + hook + " (0.00s)\n"}, ""},
		{"a printed pass without the hook's word", exerciseRun{built: true, hook: hook, exit: "exit status 0", output: "=== RUN   TestAnswer\n--- PASS: TestAnswer (0.00s)\nPASS\n"},
			"it did not run to its end — the test binary ended (exit status 0) before TestAnswer returned"},
		{"a skipped case fails a pass", exerciseRun{built: true, passed: true, hook: hook, output: "    --- SKIP: " + hook + "/TestAnswer/one (0.00s)\n        ex_test.go:14: later\n"},
			"not skip: TestAnswer/one skipped; it says:\n      ex_test.go:14: later"},
		{"a skip of another test is not the test's", exerciseRun{built: true, passed: true, hook: hook, output: "--- SKIP: TestAnswerLater (0.00s)\n"}, ""},
		{"the assertion's message", exerciseRun{built: true, hook: hook, exit: "exit status 1", output: "        \tMessages:   \tAnswer is not 42\n--- FAIL: " + hook + " (0.00s)\n"},
			"the exercise's test to pass; it says:\n      Answer is not 42"},
		{"no build", exerciseRun{output: "# example.com/x\n./ex.go:3:1: syntax error\n"}, "it does not build:\n      # example.com/x\n      ./ex.go:3:1: syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.run.verdict("TestAnswer")
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tt.want)
		})
	}
}
