package repocheck

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// platformRow is one row of README.md's table "Where each chapter runs".
type platformRow struct {
	dir            string // chapters/NN-name, or examples/workshop/check
	linux          bool
	macOS, windows how
}

// how a program runs on a platform: not at all, natively ("yes"), or in a Linux container
// through the reader's Docker ("in Docker").
type how string

const (
	notThere how = "no"
	native   how = "yes"
	inDocker how = "in Docker"
)

const platformsHeading = "## Where each chapter runs"

// platformsHeader is the table's header: the test reads its columns by position.
const platformsHeader = "| Chapter | Linux | macOS | Windows | Root | Needs |"

var rowLink = regexp.MustCompile(`^\[[^\]]+\]\(([^)]+)\)$`)

// platformTable reads the table under platformsHeading: one row per program, its first cell a
// link to the program's README or main.go, then yes or no for Linux, and yes, in Docker or no for
// macOS and Windows.
func platformTable(readme string) ([]platformRow, error) {
	_, section, found := strings.Cut(readme, "\n"+platformsHeading+"\n")
	if !found {
		return nil, fmt.Errorf("no section %q", platformsHeading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []platformRow
	header := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case !strings.HasPrefix(line, "|"):
			if header && len(rows) > 0 {
				return rows, nil // the table has ended
			}
			continue
		case !header:
			if line != platformsHeader {
				return nil, fmt.Errorf("the table's header is %q, want %q", line, platformsHeader)
			}
			header = true
			continue
		case strings.HasPrefix(line, "| ---"):
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if len(cells) != 6 {
			return nil, fmt.Errorf("%d cells, want 6: %s", len(cells), line)
		}
		link := rowLink.FindStringSubmatch(cells[0])
		if link == nil {
			return nil, fmt.Errorf("the first cell is not a link to the program: %s", line)
		}
		row := platformRow{dir: path.Dir(link[1])}
		switch cells[1] {
		case "yes":
			row.linux = true
		case "no":
		default:
			return nil, fmt.Errorf("%s: %q in the Linux column, want yes or no", row.dir, cells[1])
		}
		for i, h := range []*how{&row.macOS, &row.windows} {
			switch how(cells[2+i]) {
			case native, inDocker, notThere:
				*h = how(cells[2+i])
			default:
				return nil, fmt.Errorf("%s: %q in the %s column, want yes, in Docker or no", row.dir, cells[2+i], []string{"macOS", "Windows"}[i])
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no table under %q", platformsHeading)
	}
	return rows, nil
}

// crossPlatformVar is the Makefile's one list of what verify-platforms builds.
var crossPlatformVar = regexp.MustCompile(`(?m)^CROSS_PLATFORM\s*:=((?:.*\\\n)*.*)$`)

// crossBuilt reads the Makefile's CROSS_PLATFORM list.
func crossBuilt(makefile string) ([]string, error) {
	m := crossPlatformVar.FindStringSubmatch(makefile)
	if m == nil {
		return nil, fmt.Errorf("no CROSS_PLATFORM := … in the Makefile")
	}
	return strings.Fields(strings.ReplaceAll(m[1], "\\\n", " ")), nil
}

// platformProblems holds the README's table to the Makefile: every program has a row; every row
// runs on Linux; macOS and Windows agree (the Makefile builds one list for both); what the table
// says runs natively on them is exactly what make verify-platforms builds; what it says runs in
// Docker is exactly what make runs in Docker there (dockered: the chapters the Makefile sends to
// .ci/in-docker off Linux); and every chapter runs on them, one way or the other.
func platformProblems(rows []platformRow, built, programs, dockered []string) []string {
	var problems []string
	inTable := map[string]platformRow{}
	for _, r := range rows {
		if _, dup := inTable[r.dir]; dup {
			problems = append(problems, r.dir+": two rows")
		}
		inTable[r.dir] = r
		if !slices.Contains(programs, r.dir) {
			problems = append(problems, r.dir+": a row, but no such chapter or program")
		}
		if !r.linux {
			problems = append(problems, r.dir+": every chapter runs on Linux")
		}
		if r.macOS != r.windows {
			problems = append(problems, r.dir+": macOS and Windows differ, but the Makefile builds one list (CROSS_PLATFORM) for both")
		}
		switch listed := slices.Contains(built, r.dir); {
		case (r.macOS == native || r.windows == native) && !listed:
			problems = append(problems, r.dir+": the README says it runs on macOS/Windows, but CROSS_PLATFORM does not build it")
		case r.macOS != native && r.windows != native && listed:
			problems = append(problems, r.dir+": CROSS_PLATFORM builds it for macOS and Windows, but the README says it does not run there natively")
		}
		switch docker := slices.Contains(dockered, r.dir); {
		case (r.macOS == inDocker || r.windows == inDocker) && !docker:
			problems = append(problems, r.dir+": the README says it runs in Docker on macOS/Windows, but make does not run it there in Docker")
		case r.macOS != inDocker && r.windows != inDocker && docker:
			problems = append(problems, r.dir+": make runs it in Docker on macOS and Windows, but the README does not say so")
		}
		if strings.HasPrefix(r.dir, "chapters/") && (r.macOS == notThere || r.windows == notThere) {
			problems = append(problems, r.dir+": every chapter runs on macOS and Windows, natively or in Docker")
		}
	}
	for _, p := range programs {
		if _, ok := inTable[p]; !ok {
			problems = append(problems, p+": no row in the README's table")
		}
	}
	for _, b := range built {
		if _, ok := inTable[b]; !ok && !slices.Contains(programs, b) {
			problems = append(problems, b+": CROSS_PLATFORM builds it, but it is no chapter or program of the table")
		}
	}
	return problems
}

// TestPlatforms: README.md's "Where each chapter runs" and the Makefile say the same — what
// make verify-platforms builds for darwin/arm64 and windows/amd64 (CROSS_PLATFORM) runs there
// natively, and make verify builds it; what make runs in Docker on macOS and Windows, as make
// itself decides it there (its uname faked), runs there in Docker.
func TestPlatforms(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	makefile, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	rows, err := platformTable(string(readme))
	require.NoError(t, err)
	built, err := crossBuilt(string(makefile))
	require.NoError(t, err)

	chapters, err := filepath.Glob("[0-9][0-9]-*")
	require.NoError(t, err)
	require.NotEmpty(t, chapters)
	var programs []string
	for _, c := range chapters {
		programs = append(programs, "chapters/"+c)
	}
	programs = append(programs, "examples/kubelet-pods", "examples/workshop/check")

	var dockered []string
	for _, uname := range []string{"Darwin", "MINGW64_NT-10.0-22631"} {
		bin := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(bin, "uname"), []byte("#!/bin/sh\necho "+uname+"\n"), 0o755))
		cmd := exec.Command("make", "--no-print-directory", "-s", "-C", "..", "--eval=print-in-docker: ; @:$(info $(foreach c,$(CHAPTERS),$(if $(call in-docker,$(c)),chapters/$(c))))", "print-in-docker")
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "RUN_IN=")
		out, err := cmd.Output()
		require.NoError(t, err)
		if dockered == nil {
			dockered = strings.Fields(string(out))
		}
		assert.Equal(t, dockered, strings.Fields(string(out)), "make runs the same chapters in Docker on macOS and on Windows (%s)", uname)
	}
	assert.Empty(t, platformProblems(rows, built, programs, dockered))
	verify, _, _ := strings.Cut(regexp.MustCompile(`(?m)^verify:.*$`).FindString(string(makefile)), "##")
	assert.Contains(t, strings.Fields(verify), "verify-platforms", "make verify builds for the other platforms: %s", verify)
}

func TestPlatformProblems(t *testing.T) {
	programs := []string{"chapters/01-a", "chapters/02-b", "examples/workshop/check"}
	rows := []platformRow{
		{dir: "chapters/01-a", linux: true, macOS: inDocker, windows: inDocker},
		{dir: "chapters/02-b", linux: true, macOS: native, windows: native},
		{dir: "examples/workshop/check", linux: true, macOS: native, windows: native},
	}
	built := []string{"chapters/02-b", "examples/workshop/check"}
	dockered := []string{"chapters/01-a"}
	with := func(change func(rows []platformRow) []platformRow) []platformRow {
		return change(slices.Clone(rows))
	}
	tests := []struct {
		name            string
		rows            []platformRow
		built, dockered []string
		want            []string
	}{
		{"agree", rows, built, dockered, nil},
		{"the table alone says native", with(func(r []platformRow) []platformRow { r[0].macOS, r[0].windows = native, native; return r }), built, dockered,
			[]string{"chapters/01-a: the README says it runs on macOS/Windows, but CROSS_PLATFORM does not build it",
				"chapters/01-a: make runs it in Docker on macOS and Windows, but the README does not say so"}},
		{"the Makefile alone builds it", rows, []string{"chapters/01-a", "chapters/02-b", "examples/workshop/check"}, dockered,
			[]string{"chapters/01-a: CROSS_PLATFORM builds it for macOS and Windows, but the README says it does not run there natively"}},
		{"the table alone says in Docker", with(func(r []platformRow) []platformRow { r[1].macOS, r[1].windows = inDocker, inDocker; return r }), built, dockered,
			[]string{"chapters/02-b: CROSS_PLATFORM builds it for macOS and Windows, but the README says it does not run there natively",
				"chapters/02-b: the README says it runs in Docker on macOS/Windows, but make does not run it there in Docker"}},
		{"a chapter that does not run on macOS", with(func(r []platformRow) []platformRow { r[0].macOS, r[0].windows = notThere, notThere; return r }), built, nil,
			[]string{"chapters/01-a: every chapter runs on macOS and Windows, natively or in Docker"}},
		{"a chapter without a row", rows[1:], built, nil,
			[]string{"chapters/01-a: no row in the README's table"}},
		{"macOS without Windows", with(func(r []platformRow) []platformRow { r[2].windows = notThere; return r }), built, dockered,
			[]string{"examples/workshop/check: macOS and Windows differ, but the Makefile builds one list (CROSS_PLATFORM) for both"}},
		{"a row for no chapter", append(slices.Clone(rows), platformRow{dir: "chapters/11-gone", linux: true, macOS: native, windows: native}), built, dockered,
			[]string{"chapters/11-gone: a row, but no such chapter or program",
				"chapters/11-gone: the README says it runs on macOS/Windows, but CROSS_PLATFORM does not build it"}},
		{"a build of no chapter", rows, []string{"chapters/02-b", "examples/workshop/check", "chapters/12-x"}, dockered,
			[]string{"chapters/12-x: CROSS_PLATFORM builds it, but it is no chapter or program of the table"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, platformProblems(tt.rows, tt.built, programs, tt.dockered))
		})
	}
}
