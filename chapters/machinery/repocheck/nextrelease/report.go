package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// report is everything one look at the next release found, written as one Markdown file.
type report struct {
	pinned, next string
	// goLine is the next release's go line, goVersion its .go-version, toolchain what the builds
	// ran with (GOTOOLCHAIN), local this machine's Go.
	goLine, goVersion, toolchain, local string
	modChanges                          []string
	tidy                                string // go mod tidy's output
	tidyOK                              bool
	units                               []*unit
	// The README runs: the chapters asked for, each chapter's result and each failed command's,
	// what go test printed outside its events, and why they did not run, if they did not.
	readmeChapters  []string
	chapterResults  []readmeResult
	failedCommands  []readmeResult
	readmeOther     string
	readmesSkipped  string
	checked         int
	broken          []citation
	citationsOfForm []error
}

// maxLines is how much of one command's output the report keeps.
const maxLines = 80

func (r *report) write(w io.Writer) error {
	p := &printer{w: w}
	p.f("# k8s.io/kubernetes %s against this repository (pinned: %s)\n\n", r.next, r.pinned)
	p.f("Written by `make next K8S=%s` (chapters/machinery/repocheck/nextrelease): a copy of the module whose go.mod "+
		"requires %s, every part built and vetted with Go %s, the README samples of the chapters that run without "+
		"the lab run and compared, and every citation checked against %s. The pinned go.mod was not touched.\n\n",
		r.next, r.next, r.toolchainName(), r.next)

	p.f("## Summary\n\n")
	p.f("- Go: %s's go.mod says `go %s`%s; the builds ran with `GOTOOLCHAIN=%s` (this machine: %s).\n",
		r.next, r.goLine, r.goVersionText(), r.toolchain, r.local)
	built, vetted := 0, 0
	for _, u := range r.units {
		if u.built {
			built++
		}
		if u.vets {
			vetted++
		}
	}
	p.f("- Build: %d of %d parts compile (`go build`), %d pass `go vet` (tests included).\n", built, len(r.units), vetted)
	if missing := unfetched(r.tidy); len(missing) > 0 {
		p.f("- Modules the go command could not download, so that no package importing them builds: %s.\n", strings.Join(missing, "; "))
	}
	if r.readmesSkipped != "" {
		p.f("- README samples: not run (%s).\n", r.readmesSkipped)
	} else {
		passed := 0
		for _, c := range r.chapterResults {
			if c.action == "pass" {
				passed++
			}
		}
		p.f("- README samples: %d of %d chapters' READMEs as their samples show (%s); %d commands differ.\n",
			passed, len(r.readmeChapters), strings.Join(r.readmeChapters, ", "), len(r.failedCommands))
	}
	moved := 0
	for _, b := range r.broken {
		if b.gone == "" {
			moved++
		}
	}
	p.f("- Citations: %d checked, %d hold, %d moved, %d whose code is gone.\n\n", r.checked, r.checked-len(r.broken), moved, len(r.broken)-moved)

	p.f("## The module\n\n")
	for _, c := range r.modChanges {
		p.f("- %s\n", c)
	}
	if r.tidyOK {
		p.f("\n`go mod tidy -e` succeeded.\n\n")
	} else {
		p.f("\n`go mod tidy -e` failed:\n\n")
	}
	p.block("text", r.tidy)

	p.f("## What no longer compiles\n\n")
	if built == len(r.units) && vetted == len(r.units) {
		p.f("Everything compiles, and `go vet` finds nothing.\n\n")
	}
	for _, u := range r.units {
		switch {
		case u.built && u.vets:
			p.f("- `%s`: compiles, vet passes.\n", u.dir)
		case u.built:
			p.f("- `%s`: compiles; `go vet` (tests included) fails.\n", u.dir)
		default:
			p.f("- `%s`: does not compile.\n", u.dir)
		}
	}
	p.f("\n")
	for _, u := range r.units {
		if !u.built {
			p.f("### `go build ./%s/...`\n\n", u.dir)
			p.block("text", u.build)
		}
		if !u.vets && (u.built || u.vet != u.build) {
			p.f("### `go vet ./%s/...`\n\n", u.dir)
			p.block("text", u.vet)
		}
	}

	p.f("## Samples that changed\n\n")
	switch {
	case r.readmesSkipped != "":
		p.f("Not run: %s.\n\n", r.readmesSkipped)
	default:
		for _, c := range r.chapterResults {
			p.f("- %s: %s\n", c.name, map[string]string{"pass": "as its samples show", "fail": "differs", "skip": "skipped", "": "did not finish"}[c.action])
			if c.action == "skip" && c.output != "" {
				p.f("  (%s)\n", strings.Join(strings.Fields(c.output), " "))
			}
		}
		p.f("\n")
		for _, f := range r.failedCommands {
			p.f("### %s\n\n", f.name)
			p.block("text", f.output)
		}
		if strings.TrimSpace(r.readmeOther) != "" {
			p.f("What `go test` printed besides:\n\n")
			p.block("text", r.readmeOther)
		}
	}

	p.f("## Citations that moved\n\n")
	if moved == 0 {
		p.f("None.\n\n")
	} else {
		p.f("| Where | At %s | At %s |\n| --- | --- | --- |\n", r.pinned, r.next)
		for _, b := range r.broken {
			if b.gone == "" {
				p.f("| %s | `%s` | `%s` |\n", b.cite.Where, cell(b.cite.String()), cell(b.now.String()))
			}
		}
		p.f("\n")
	}
	p.f("## Citations whose code is gone\n\n")
	if len(r.broken) == moved {
		p.f("None.\n\n")
	} else {
		p.f("| Where | Citation | At %s |\n| --- | --- | --- |\n", r.next)
		for _, b := range r.broken {
			if b.gone != "" {
				why := strings.TrimPrefix(b.problem, b.cite.Where+": "+b.cite.String()+": ")
				p.f("| %s | `%s` | %s; %s |\n", b.cite.Where, cell(b.cite.String()), cell(why), cell(b.gone))
			}
		}
		p.f("\n")
	}
	if len(r.citationsOfForm) > 0 {
		p.f("## Citations of the wrong form (whatever the release)\n\n")
		for _, e := range r.citationsOfForm {
			p.f("- %s\n", e)
		}
		p.f("\n")
	}
	return p.err
}

func (r *report) toolchainName() string {
	if r.toolchain == "local" {
		return r.local
	}
	return r.toolchain
}

func (r *report) goVersionText() string {
	if r.goVersion == "" {
		return ""
	}
	return fmt.Sprintf(" and its `.go-version` %s", r.goVersion)
}

// fetchError is the go command's line for a module it could not download, and the proxy's answer.
var fetchError = regexp.MustCompile(`(?m)(\S+@v\S+): reading \S+: (.+)(?:\n\s*server response: (.+))?`)

// unfetched lists, once each, the modules whose download the go command's output reports failed,
// with why: "sigs.k8s.io/x@v1.0.0 (403 Forbidden: This module version is not available.)".
func unfetched(output string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range fetchError.FindAllStringSubmatch(output, -1) {
		if seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		why := strings.TrimSpace(m[2])
		if m[3] != "" {
			why += ": " + strings.TrimSpace(m[3])
		}
		out = append(out, fmt.Sprintf("`%s` (%s)", m[1], why))
	}
	return out
}

// cell makes text fit in a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

// printer writes Markdown, keeping the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// block writes text as a fenced block, its first maxLines lines.
func (p *printer) block(lang, text string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	if len(lines) > maxLines {
		lines = append(lines[:maxLines], fmt.Sprintf("… %d more lines", len(lines)-maxLines))
	}
	p.f("```%s\n%s\n```\n\n", lang, strings.ReplaceAll(strings.Join(lines, "\n"), "```", "'''"))
}
