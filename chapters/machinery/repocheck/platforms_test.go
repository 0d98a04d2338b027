package repocheck

import (
	"fmt"
	"os"
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
	dir                   string // chapters/NN-name, or examples/workshop/check
	linux, macOS, windows bool
}

const platformsHeading = "## Where each chapter runs"

// platformsHeader is the table's header: the test reads its columns by position.
const platformsHeader = "| Chapter | Linux | macOS | Windows | Root | Needs |"

var rowLink = regexp.MustCompile(`^\[[^\]]+\]\(([^)]+)\)$`)

// platformTable reads the table under platformsHeading: one row per program, its first cell a
// link to the program's README or main.go, then yes or no for Linux, macOS and Windows.
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
		for i, on := range []*bool{&row.linux, &row.macOS, &row.windows} {
			switch cells[1+i] {
			case "yes":
				*on = true
			case "no":
			default:
				return nil, fmt.Errorf("%s: %q in the %s column, want yes or no", row.dir, cells[1+i], []string{"Linux", "macOS", "Windows"}[i])
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

// platformProblems holds the README's table to the Makefile's list: every program has a row;
// every row runs on Linux; macOS and Windows agree (the Makefile builds one list for both); and
// what the table says runs on them is exactly what make verify-platforms builds.
func platformProblems(rows []platformRow, built, programs []string) []string {
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
		case (r.macOS || r.windows) && !listed:
			problems = append(problems, r.dir+": the README says it runs on macOS/Windows, but CROSS_PLATFORM does not build it")
		case !(r.macOS || r.windows) && listed:
			problems = append(problems, r.dir+": CROSS_PLATFORM builds it for macOS and Windows, but the README says it runs on Linux only")
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

// TestPlatforms: README.md's "Where each chapter runs" and the Makefile's CROSS_PLATFORM (what
// make verify-platforms builds for darwin/arm64 and windows/amd64) say the same, and make verify
// builds it.
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

	assert.Empty(t, platformProblems(rows, built, programs))
	verify, _, _ := strings.Cut(regexp.MustCompile(`(?m)^verify:.*$`).FindString(string(makefile)), "##")
	assert.Contains(t, strings.Fields(verify), "verify-platforms", "make verify builds for the other platforms: %s", verify)
}

func TestPlatformProblems(t *testing.T) {
	programs := []string{"chapters/01-a", "chapters/02-b", "examples/workshop/check"}
	rows := []platformRow{
		{dir: "chapters/01-a", linux: true},
		{dir: "chapters/02-b", linux: true, macOS: true, windows: true},
		{dir: "examples/workshop/check", linux: true, macOS: true, windows: true},
	}
	with := func(change func(rows []platformRow) []platformRow) []platformRow {
		return change(slices.Clone(rows))
	}
	tests := []struct {
		name  string
		rows  []platformRow
		built []string
		want  []string
	}{
		{"agree", rows, []string{"chapters/02-b", "examples/workshop/check"}, nil},
		{"the table alone changes", with(func(r []platformRow) []platformRow { r[0].macOS, r[0].windows = true, true; return r }),
			[]string{"chapters/02-b", "examples/workshop/check"},
			[]string{"chapters/01-a: the README says it runs on macOS/Windows, but CROSS_PLATFORM does not build it"}},
		{"the Makefile alone changes", rows, []string{"chapters/01-a", "chapters/02-b", "examples/workshop/check"},
			[]string{"chapters/01-a: CROSS_PLATFORM builds it for macOS and Windows, but the README says it runs on Linux only"}},
		{"a chapter without a row", rows[1:], []string{"chapters/02-b", "examples/workshop/check"},
			[]string{"chapters/01-a: no row in the README's table"}},
		{"macOS without Windows", with(func(r []platformRow) []platformRow { r[1].windows = false; return r }),
			[]string{"chapters/02-b", "examples/workshop/check"},
			[]string{"chapters/02-b: macOS and Windows differ, but the Makefile builds one list (CROSS_PLATFORM) for both"}},
		{"a row for no chapter", append(slices.Clone(rows), platformRow{dir: "chapters/11-gone", linux: true}), []string{"chapters/02-b", "examples/workshop/check"},
			[]string{"chapters/11-gone: a row, but no such chapter or program"}},
		{"a build of no chapter", rows, []string{"chapters/02-b", "examples/workshop/check", "chapters/12-x"},
			[]string{"chapters/12-x: CROSS_PLATFORM builds it, but it is no chapter or program of the table"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, platformProblems(tt.rows, tt.built, programs))
		})
	}
}

func TestPlatformTable(t *testing.T) {
	readme := "# x\n\n" + platformsHeading + "\n\nText.\n\n" + platformsHeader + "\n| --- | --- | --- | --- | --- | --- |\n" +
		"| [01 entry point](chapters/01-entrypoint/README.md) | yes | no | no | no | nothing |\n" +
		"| [the workshop's checker](examples/workshop/check/main.go) | yes | yes | yes | no | minikube |\n\nAfter.\n\n## Next\n"
	rows, err := platformTable(readme)
	require.NoError(t, err)
	assert.Equal(t, []platformRow{
		{dir: "chapters/01-entrypoint", linux: true},
		{dir: "examples/workshop/check", linux: true, macOS: true, windows: true},
	}, rows)

	for name, broken := range map[string]string{
		"no section":   "# x\n",
		"other header": platformsHeading + "\n| Chapter | Linux | Mac | Windows | Root | Needs |\n",
		"maybe":        platformsHeading + "\n" + platformsHeader + "\n| [a](chapters/01-a/README.md) | yes | maybe | no | no | x |\n",
		"no link":      platformsHeading + "\n" + platformsHeader + "\n| 01 | yes | no | no | no | x |\n",
	} {
		_, err := platformTable("\n" + broken)
		assert.Error(t, err, name)
	}
}

func TestCrossBuilt(t *testing.T) {
	built, err := crossBuilt("X := 1\nCROSS_PLATFORM := chapters/02-b \\\n  examples/workshop/check\nY := 2\n")
	require.NoError(t, err)
	assert.Equal(t, []string{"chapters/02-b", "examples/workshop/check"}, built)
	_, err = crossBuilt("X := 1\n")
	assert.Error(t, err)
}
