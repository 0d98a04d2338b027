// Package journeynote holds chapter 07's printed journey to what notes/07-syncloop.md teaches:
// the table of its section "The journey, step by step". A run of the chapter prints more steps
// than the table lists, and how many depends on the machine (a wake-up more or less, where the
// scheduler let a goroutine run first); what is taught — the table's steps, in its order, each
// with its goroutine, what it does, and a function on its stack — does not. So a run is compared
// with the note as a subsequence: every step of the table must appear, in order, and the steps
// between them are free.
//
// The package reads text only, the note's and the chapter's output, so that the README test
// can use it without linking the kubelet.
package journeynote

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Section is the title of the note's section whose table lists the steps.
const Section = "The journey, step by step"

// Step is one row of the note's table: | # | phase | goroutine | does | what | through |.
type Step struct {
	Row string // the row as written, for messages
	// Number is the step's number in the run the table was written from (the chapter README's).
	Number int
	// Phase, Goroutine and Does are as printed; What is the goroutine created or woken, the CRI
	// method or the span (empty: any); Through is a function on the goroutine's stack (empty: any).
	Phase, Goroutine, Does, What, Through string
}

// NoteSteps reads the steps of the note at path.
func NoteSteps(path string) ([]Step, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	steps, err := ParseNote(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return steps, nil
}

// ParseNote reads the table of the section "## The journey, step by step": one row per step,
// code spans for names, "—" for a cell that matches anything.
func ParseNote(markdown string) ([]Step, error) {
	_, section, found := strings.Cut(markdown, "\n## "+Section+"\n")
	if !found {
		return nil, fmt.Errorf("no section %q", Section)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var steps []Step
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| #") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 6 {
			return nil, fmt.Errorf("a row of %d cells, not six: %s", len(cells), line)
		}
		cell := func(i int) string {
			c := strings.Trim(strings.TrimSpace(cells[i]), "`")
			if c == "—" {
				return ""
			}
			return c
		}
		n, err := strconv.Atoi(cell(0))
		if err != nil {
			return nil, fmt.Errorf("a row whose # is not a number: %s", line)
		}
		steps = append(steps, Step{Row: line, Number: n, Phase: cell(1), Goroutine: cell(2), Does: cell(3), What: cell(4), Through: cell(5)})
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("the section %q has no rows", Section)
	}
	return steps, nil
}

// Printed is one step of the journey as the chapter prints it.
type Printed struct {
	Number                         int
	Phase, Goroutine, Does, Object string
	// Stack holds the functions of the stack printed with the step, innermost first; for a
	// step that refers to an earlier step's stack ("the same stack as step N"), that stack.
	Stack []string
	// Lines are the step's lines as printed.
	Lines []string
}

var (
	// "== add: web.yaml appears in the static pod directory =="
	phaseLine = regexp.MustCompile(`^== (\w+): .* ==$`)
	// " 12  kubelet.(*Kubelet).Run creates kubelet.(*podWorkers).UpdatePod.func1", then perhaps
	// ", which waited [select] in …"
	stepLine = regexp.MustCompile(`^ *(\d+)  (\S+) (\w+)(?: ([^\s,]+))?(?:, which waited .*)?$`)
	// "       kubelet.(*Kubelet).Run  FILE#LINE (CODE)": the function, padded,
	// two spaces, the file and line.
	frameLine = regexp.MustCompile(`^       (\S+) {2,}\S+#L\d+`)
	sameStack = regexp.MustCompile(`^       \(the same stack as step (\d+)\)$`)
	// "42 steps; the kubelet ran for 5s"
	countLine = regexp.MustCompile(`^\d+ steps; `)
)

// Read reads the chapter's output back into its steps.
func Read(output string) ([]Printed, error) {
	var steps []Printed
	byNumber := map[int][]string{}
	phase := ""
	for _, line := range strings.Split(output, "\n") {
		if m := phaseLine.FindStringSubmatch(line); m != nil {
			phase = m[1]
			continue
		}
		if m := stepLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			steps = append(steps, Printed{Number: n, Phase: phase, Goroutine: m[2], Does: m[3], Object: m[4], Lines: []string{line}})
			continue
		}
		if len(steps) == 0 || !strings.HasPrefix(line, "       ") {
			continue
		}
		s := &steps[len(steps)-1]
		s.Lines = append(s.Lines, line)
		if m := frameLine.FindStringSubmatch(line); m != nil {
			s.Stack = append(s.Stack, m[1])
			byNumber[s.Number] = s.Stack
		} else if m := sameStack.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			earlier, ok := byNumber[n]
			if !ok {
				return nil, fmt.Errorf("step %d refers to the stack of step %d, which printed none before it", s.Number, n)
			}
			s.Stack = earlier
		}
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no step in the output")
	}
	return steps, nil
}

// Matches says whether a printed step is the note's step.
func (s Step) Matches(p Printed) bool {
	return p.Phase == s.Phase && p.Goroutine == s.Goroutine && p.Does == s.Does &&
		(s.What == "" || p.Object == s.What) && (s.Through == "" || slices.Contains(p.Stack, s.Through))
}

// Follow finds the note's steps in the printed ones, in order, other steps between them free,
// and returns the printed step each matched; the error names the first step of the note that
// is not there and where it was looked for.
func Follow(printed []Printed, steps []Step) ([]Printed, error) {
	var matched []Printed
	next := 0
	for _, s := range steps {
		i := slices.IndexFunc(printed[next:], s.Matches)
		if i < 0 {
			after := "from the start"
			if next > 0 {
				after = fmt.Sprintf("after printed step %d (which matched the note's step %d)", printed[next-1].Number, matched[len(matched)-1].Number)
			}
			return matched, fmt.Errorf("the note's step %d is not in the output %s: %s", s.Number, after, s.Row)
		}
		matched = append(matched, printed[next+i])
		next += i + 1
	}
	return matched, nil
}

// Follows reads output and checks that it follows the note's steps.
func Follows(output string, steps []Step) error {
	printed, err := Read(output)
	if err != nil {
		return err
	}
	_, err = Follow(printed, steps)
	return err
}

// Prose is what the output says besides its steps — the introduction, each phase's title and
// the pod it is about, and the summary, whose number of steps becomes N — one line each, blank
// lines left out: what a README can show exactly, whatever the machine.
func Prose(output string) string {
	var out []string
	inStep := false
	for _, line := range strings.Split(output, "\n") {
		switch {
		case stepLine.MatchString(line):
			inStep = true
		case inStep && strings.HasPrefix(line, "       "):
		case strings.TrimSpace(line) == "":
			inStep = false
		case countLine.MatchString(line):
			inStep = false
			out = append(out, countLine.ReplaceAllString(line, "N steps; "))
		default:
			inStep = false
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
