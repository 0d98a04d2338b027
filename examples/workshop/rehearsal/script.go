// Package rehearsal rehearses the workshop literally: it reads every command block of the
// workshop's Markdown (README.md, INSTRUCTOR.md, each exercise's README.md) and runs each command
// as written, with bash, against chapter 12's minikube-shaped node through the repository's
// `minikube` command; README.md in this directory has the rules. This file reads the blocks and
// matches what a command printed against the sample output the Markdown shows; rehearsal_test.go
// runs them.
package rehearsal

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Block is one ```console or ```sh block of a Markdown file.
type Block struct {
	File     string // relative to the repository's root
	Heading  string // the nearest heading above it, without its #s
	Line     int    // the line of its opening fence
	Commands []Command
}

// Command is one command of a block, as a reader would type it, and the output the block shows
// after it (```console blocks only).
type Command struct {
	Text   string // continuation lines joined with "\n", their backslashes kept
	Line   int
	Sample []string
}

func (c Command) String() string { return fmt.Sprintf("line %d: $ %s", c.Line, c.Text) }

var (
	fenceOpen  = regexp.MustCompile("^(\\s*)```(\\w*)\\s*$")
	fenceClose = regexp.MustCompile("^\\s*```\\s*$")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
)

// ReadBlocks reads the command blocks of a Markdown file: ```console blocks, whose commands start
// with "$ " and are followed by what they print, and ```sh blocks, one command a line. A line
// ending in a backslash continues on the next. Blocks of other languages (```text, ```yaml…) are
// not commands. A comment line in a command block is an error: pasted into zsh as macOS ships it,
// whose interactive shell does not know comments, it would run as a command named "#".
func ReadBlocks(root, file string) ([]Block, error) {
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var blocks []Block
	var cur *Block
	var indent, lang, head string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if cur == nil && lang == "" {
			if m := heading.FindStringSubmatch(line); m != nil {
				head = strings.TrimSpace(m[1])
				continue
			}
			if m := fenceOpen.FindStringSubmatch(line); m != nil {
				indent, lang = m[1], m[2]
				if lang == "console" || lang == "sh" {
					cur = &Block{File: file, Heading: head, Line: n}
				} else if lang == "" {
					lang = "plain"
				}
			}
			continue
		}
		if fenceClose.MatchString(line) {
			if cur != nil {
				if len(cur.Commands) == 0 {
					return nil, fmt.Errorf("%s:%d: a ```%s block without a command", file, cur.Line, lang)
				}
				blocks = append(blocks, *cur)
			}
			cur, lang = nil, ""
			continue
		}
		if cur == nil {
			continue // inside a block of another language
		}
		line = strings.TrimPrefix(line, indent)
		last := len(cur.Commands) - 1
		switch {
		case last >= 0 && strings.HasSuffix(cur.Commands[last].Text, `\`) && len(cur.Commands[last].Sample) == 0:
			cur.Commands[last].Text += "\n" + line
		case lang == "console" && strings.HasPrefix(line, "$ "):
			cur.Commands = append(cur.Commands, Command{Text: strings.TrimPrefix(line, "$ "), Line: n})
		case lang == "console" && last < 0:
			return nil, fmt.Errorf("%s:%d: output before the first \"$ \" command", file, n)
		case lang == "console":
			cur.Commands[last].Sample = append(cur.Commands[last].Sample, line)
		case strings.TrimSpace(line) == "":
		default:
			cur.Commands = append(cur.Commands, Command{Text: line, Line: n})
		}
		if last := len(cur.Commands) - 1; last >= 0 && strings.HasPrefix(strings.TrimSpace(cur.Commands[last].Text), "#") {
			return nil, fmt.Errorf("%s:%d: a comment in a command block (interactive zsh, as macOS ships it, would run it): put it in the text", file, n)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a block that never closes", file, cur.Line)
	}
	return blocks, nil
}

// IsWatch says whether a command watches — runs until stopped — so that the rehearsal waits for
// what its sample shows and then types Ctrl-C: kubectl's -w/--watch, `kubectl logs -f`,
// journalctl's -f/--follow, wherever they run (through `minikube ssh` too). Each command of a
// pipeline or list is looked at on its own: curl's -w is not kubectl's.
func IsWatch(text string) bool {
	text = strings.NewReplacer(`'`, " ", `"`, " ", "|", " ; ", "&&", " ; ").Replace(text)
	for _, segment := range strings.Split(text, ";") {
		words := strings.Fields(segment)
		// The program: after minikube ssh's "--", sudo and VAR=value assignments.
		for len(words) > 0 && (words[0] == "sudo" || words[0] == "--" || strings.Contains(words[0], "=") ||
			(words[0] == "minikube" && len(words) > 1 && words[1] == "ssh") || words[0] == "ssh") {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		has := func(w ...string) bool {
			for _, word := range words[1:] {
				for _, x := range w {
					if word == x {
						return true
					}
				}
			}
			return false
		}
		switch words[0] {
		case "kubectl":
			if has("-w", "--watch") || (has("logs") && has("-f", "--follow")) {
				return true
			}
		case "journalctl":
			if has("-f", "--follow") {
				return true
			}
		}
	}
	return false
}

// prompt is Delve's: a sample line that starts with it shows what the reader types there
// (exercise 16). The rehearsal runs such a command in a terminal and types each line when the
// prompt shows; the terminal echoes it, so the output reads as the sample does.
const prompt = "(dlv) "

// Typed returns the lines a command's sample shows typed after a prompt, in order.
func (c Command) Typed() []string {
	var typed []string
	for _, l := range c.Sample {
		if line, ok := strings.CutPrefix(l, prompt); ok {
			typed = append(typed, line)
		}
	}
	return typed
}

// failureMarkers start the lines with which the tools of the workshop say that they failed. A
// sample that shows one allows its command to exit non-zero; any other command must exit 0.
var failureMarkers = []string{"error:", "Error from server", "Unable to connect to the server",
	"The connection to the server", "ssh: Process exited with status", "make: *** ", "exit status ",
	"X Exiting due to", "curl: ("}

// isFailureLine says whether a sample line shows a failure.
func isFailureLine(line string) bool {
	line = strings.TrimSpace(line)
	for _, m := range failureMarkers {
		if strings.HasPrefix(line, m) {
			return true
		}
	}
	return false
}

// MayFail says whether a command's sample shows that it fails.
func (c Command) MayFail() bool {
	for _, l := range c.Sample {
		if isFailureLine(l) {
			return true
		}
	}
	return false
}

// MustFail says whether a command's sample shows nothing but its failure: then the command must
// fail, since a success would match the sample's "…" lines and prove nothing.
func (c Command) MustFail() bool {
	failure := false
	for _, l := range c.Sample {
		switch t := strings.TrimSpace(l); {
		case isFailureLine(l):
			failure = true
		case t != "" && strings.Trim(t, "… ") != "":
			return false
		}
	}
	return failure
}

// ansi matches terminal escape sequences (colours, cursor moves) that a command printing to a
// terminal may send; the node's `minikube ssh` gives commands one.
// ansi matches what a terminal does not print: CSI sequences (colors) and OSC sequences, ended by
// BEL or by ST (systemd's hyperlinks: ESC ] 8 ; ; URL ESC \ text ESC ] 8 ; ; ESC \).
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)`)

// Lines splits output as a reader sees it on a terminal: escape sequences dropped, "\r\n" (the
// node's terminal) as a line end.
func Lines(out string) []string {
	out = ansi.ReplaceAllString(out, "")
	out = strings.ReplaceAll(out, "\r\n", "\n")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		if j := strings.LastIndex(l, "\r"); j >= 0 { // a line rewritten in place: what stays is after the last \r
			l = l[j+1:]
		}
		lines[i] = strings.TrimRight(l, " \t")
	}
	return lines
}

var spaces = regexp.MustCompile(`[ \t]+`)

// pattern turns a sample line into a regular expression for a whole output line: "…" stands for
// any text, and a run of spaces for any run (columns are as wide as their widest cell).
func pattern(sample string) *regexp.Regexp {
	parts := strings.Split(spaces.ReplaceAllString(strings.TrimSpace(sample), " "), "…")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(regexp.QuoteMeta(p), " ", `[ \t]+`)
	}
	// Space next to "…" may be all that "…" stands for, and trailing space is trimmed: optional.
	re := strings.NewReplacer(`[ \t]+.*`, `[ \t]*.*`, `.*[ \t]+`, `.*[ \t]*`).Replace(strings.Join(parts, ".*"))
	return regexp.MustCompile(`^[ \t]*` + re + `[ \t]*$`)
}

// Match checks output against a sample: every sample line (but an empty one, or a lone "…") must
// match a line of the output, in order; lines of the output between them are free. A failure
// line of the sample is required only when the command failed. It returns the first sample line
// not found, or "".
func Match(sample []string, output string, failed bool) string {
	lines := Lines(output)
	i := 0
	for _, s := range sample {
		if t := strings.TrimSpace(s); t == "" || t == "…" || (!failed && isFailureLine(s)) {
			continue
		}
		re := pattern(s)
		for i < len(lines) && !re.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			return s
		}
		i++
	}
	return ""
}
