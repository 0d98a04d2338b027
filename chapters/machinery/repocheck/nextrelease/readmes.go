package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The README runner (chapters/machinery/repocheck/readme_test.go) runs each chapter README's
// commands and compares their output with the README's samples; its subtests are named after the
// chapter (TestChapterREADMEs/04-runkubelet), one more level per command.
const readmeTest = "TestChapterREADMEs"

// labCommand is a README command of minikube's: such a README runs in the lab, on a minikube built
// for the current release, which says nothing about the next one.
var labCommand = regexp.MustCompile("(?m)^minikube ")

// readmeChapters are the chapters whose READMEs run without the lab, in order.
func readmeChapters(tree string) ([]string, error) {
	readmes, err := filepath.Glob(filepath.Join(tree, "chapters", "[0-9][0-9]-*", "README.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(readmes)
	var out []string
	for _, r := range readmes {
		data, err := os.ReadFile(r)
		if err != nil {
			return nil, err
		}
		if !labCommand.Match(data) {
			out = append(out, filepath.Base(filepath.Dir(r)))
		}
	}
	return out, nil
}

// runPattern is go test's -run for those chapters' READMEs.
func runPattern(chapters []string) string {
	quoted := make([]string, len(chapters))
	for i, c := range chapters {
		quoted[i] = regexp.QuoteMeta(c)
	}
	return "^" + readmeTest + "$/^(" + strings.Join(quoted, "|") + ")$"
}

// testEvent is one line of go test -json (cmd/test2json).
type testEvent struct {
	Action string
	Test   string
	Output string
}

// readmeResult is what became of one chapter's README, or of one of its commands.
type readmeResult struct {
	name   string // 04-runkubelet, or 04-runkubelet/go run ./chapters/04-runkubelet
	action string // pass, fail or skip
	output string // what the test printed (the failure with its diff, the skip's reason)
}

// readmeResults reads go test -json's output: each chapter's result, and what each failed chapter
// and command printed (testify's message and diff, or why a program could not be built); lines
// that are not events (the build's errors when the runner could not be built) come back as other.
func readmeResults(stream string) (chapters, failed []readmeResult, other string) {
	outputs := map[string]*strings.Builder{}
	var order []string
	var rest strings.Builder
	done := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e testEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			rest.WriteString(sc.Text() + "\n")
			continue
		}
		if e.Action == "build-output" {
			rest.WriteString(e.Output)
			continue
		}
		name, ok := strings.CutPrefix(e.Test, readmeTest+"/")
		if !ok {
			continue
		}
		switch e.Action {
		case "output":
			if outputs[name] == nil {
				outputs[name] = &strings.Builder{}
				order = append(order, name)
			}
			if !testLine.MatchString(e.Output) {
				outputs[name].WriteString(e.Output)
			}
		case "pass", "fail", "skip":
			done[name] = e.Action
		}
	}
	for _, name := range order {
		r := readmeResult{name: name, action: done[name], output: strings.TrimRight(outputs[name].String(), "\n")}
		if !strings.Contains(name, "/") {
			chapters = append(chapters, r)
		}
		if r.action == "fail" && r.output != "" {
			failed = append(failed, r) // a chapter's own output: why its commands could not run
		}
	}
	return chapters, failed, rest.String()
}

// testLine is what go test prints around a test's own output.
var testLine = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP))`)
