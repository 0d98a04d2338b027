package repocheck

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// badInputTable is the table of bad inputs every command must refuse at once (see its top).
const badInputTable = "../.ci/bad-input.md"

// badInput is one row of the table.
type badInput struct {
	line    int
	command string   // the package to build, from the repository's root
	args    []string // with the placeholders ({repo}, {existing}, {busy-port}, {planted-socket}) still in them
	sees    string   // what the output must contain (placeholders too)
	needs   string   // "", "linux" or "root"
}

// splitRow splits a Markdown table row into its cells; "\|" is a | inside a cell.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// code is the text of a cell written as `code`.
func code(cell string) (string, bool) {
	if len(cell) < 2 || cell[0] != '`' || cell[len(cell)-1] != '`' {
		return "", false
	}
	return cell[1 : len(cell)-1], true
}

// splitArgs splits an input as a shell does for the simple cases the table uses: words
// separated by spaces, single quotes around a word (two of them, an empty argument).
func splitArgs(s string) []string {
	var args []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				args = append(args, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		args = append(args, word.String())
	}
	return args
}

// readBadInputs parses the table.
func readBadInputs(t *testing.T, path string) []badInput {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var rows []badInput
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue // prose
		}
		cells := splitRow(line)
		if cells[0] == "command" || strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue // a header, or the line under it
		}
		require.GreaterOrEqual(t, len(cells), 3, "%s:%d: a row is | command | input | what the user sees | (needs) |", path, n)
		input, ok := code(cells[1])
		require.True(t, ok, "%s:%d: the input is written as `code`: %q", path, n, cells[1])
		sees, ok := code(cells[2])
		require.True(t, ok, "%s:%d: what the user sees is written as `code`: %q", path, n, cells[2])
		require.NotEmpty(t, sees, "%s:%d: what the user sees", path, n)
		row := badInput{line: n, command: strings.Trim(cells[0], "`"), args: splitArgs(input), sees: sees}
		if len(cells) > 3 {
			row.needs = cells[3]
		}
		require.Contains(t, []string{"", "linux", "root"}, row.needs, "%s:%d: needs", path, n)
		rows = append(rows, row)
	}
	require.NoError(t, s.Err())
	return rows
}

// unavailable names the tier a row needs and this machine lacks, with why ("" when it can run).
func (row badInput) unavailable() (string, error) {
	switch {
	case row.needs == "linux" && runtime.GOOS != "linux":
		return "Linux", fmt.Errorf("%s runs only on Linux", row.command)
	case row.needs == "root" && os.Geteuid() != 0:
		return "root", fmt.Errorf("%s needs root", row.command)
	}
	return "", nil
}

// existingContent is what {existing} holds before and must hold after.
const existingContent = "the reader's own file: never overwritten\n"

// TestBadInput runs every row of .ci/bad-input.md: the command, with the input, in a working
// directory and TMPDIR of its own. It must exit non-zero at once, print what the row says, leave
// nothing behind in either directory and leave {existing} as it was.
func TestBadInput(t *testing.T) {
	tier.Long(t, "the bad inputs (a build of several kubelet chapters, minutes when cold)")
	rows := readBadInputs(t, badInputTable)
	require.NotEmpty(t, rows)
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	b := newBuilds(t)
	var programs []string
	for _, row := range rows {
		if tierName, _ := row.unavailable(); tierName == "" {
			programs = append(programs, row.command)
		}
	}
	b.prebuild(t, programs)
	for _, row := range rows {
		// Named by command and line, with no slash: -run 'TestBadInput/08-minicluster' picks a
		// chapter's rows, -run 'TestBadInput/line42$' one row.
		name := fmt.Sprintf("%s line%d", filepath.Base(row.command), row.line)
		t.Run(name, func(t *testing.T) {
			t.Logf("%s:%d: %s %s", badInputTable, row.line, row.command, strings.Join(row.args, " "))
			if tierName, why := row.unavailable(); tierName != "" {
				tier.Unavailable(t, tierName, why)
			}
			bin := b.binary(t, row.command)
			work, tmp := t.TempDir(), t.TempDir()
			existing := filepath.Join(work, "existing")
			require.NoError(t, os.WriteFile(existing, []byte(existingContent), 0o644))
			busy, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer busy.Close()
			planted := ""
			if slices.ContainsFunc(row.args, func(a string) bool { return strings.Contains(a, "{planted-socket}") }) {
				planted = plantedSocket(t)
			}
			placeholders := strings.NewReplacer("{repo}", repo, "{existing}", existing,
				"{busy-port}", strconv.Itoa(busy.Addr().(*net.TCPAddr).Port), "{planted-socket}", planted)
			args := make([]string, len(row.args))
			for i, a := range row.args {
				args[i] = placeholders.Replace(a)
			}
			sees := placeholders.Replace(row.sees)

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			cmd.WaitDelay = 5 * time.Second
			start := time.Now()
			out, err := cmd.CombinedOutput()
			elapsed := time.Since(start)

			require.Error(t, err, "%s:%d: it succeeded:\n%s", badInputTable, row.line, out)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%s:%d: it did not exit (%v):\n%s", badInputTable, row.line, err, out)
			assert.NotContains(t, string(out), "panic:", "%s:%d", badInputTable, row.line)
			assert.Contains(t, string(out), sees, "%s:%d: what the user sees", badInputTable, row.line)
			assert.Less(t, elapsed, 15*time.Second, "%s:%d: a bad input is refused before any work starts", badInputTable, row.line)
			assert.Equal(t, []string{"existing"}, entries(t, work), "%s:%d: left in the working directory", badInputTable, row.line)
			assert.Empty(t, entries(t, tmp), "%s:%d: left in TMPDIR", badInputTable, row.line)
			data, err := os.ReadFile(existing)
			require.NoError(t, err)
			assert.Equal(t, existingContent, string(data), "%s:%d: {existing} changed", badInputTable, row.line)
		})
	}
}

// plantedSocket is a listening unix socket in a directory every user may write (not sticky):
// where anyone could have put it in a kubelet's place.
func plantedSocket(t *testing.T) string {
	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	l, err := net.Listen("unix", filepath.Join(open, "pods-api.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().String()
}

func entries(t *testing.T, dir string) []string {
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}
