package notescheck

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// Locate says where a citation that Check finds broken at s.Version points now: the declaration it
// names, or its quoted text, in the cited file, or, when that file has neither or is gone, in
// another file of the same directory (code moves between the files of a package). It returns
// the citation as it would read at s.Version, which Check accepts; when the text is in several
// places of one file, the one nearest the cited lines. The error says why there is none.
func (s *Source) Locate(c Citation) (Citation, error) {
	if c.From == 0 {
		return Citation{}, fmt.Errorf("%s is not in kubernetes %s", c.Path, s.Version)
	}
	for _, p := range s.siblings(c.Path) {
		file, err := s.File(p)
		if err != nil {
			continue
		}
		src, err := s.load(file)
		if err != nil {
			continue
		}
		var found []Citation
		for _, at := range candidates(c, src) {
			moved := c
			moved.Path, moved.From, moved.To = p, at.from, at.to
			if s.Check(moved) == nil {
				found = append(found, moved)
			}
		}
		if len(found) == 0 {
			continue
		}
		sort.SliceStable(found, func(i, j int) bool { return distance(found[i], c) < distance(found[j], c) })
		return found[0], nil
	}
	return Citation{}, fmt.Errorf("%q is neither in %s nor in another file of %s in kubernetes %s", c.Symbol, c.Path, path.Dir(c.Path), s.Version)
}

// siblings are the repository paths Locate looks in: p, then the other files of its directory
// with the same extension, in name order.
func (s *Source) siblings(p string) []string {
	out := []string{p}
	file, err := s.File(p)
	if err != nil {
		return out
	}
	entries, err := os.ReadDir(filepath.Dir(file))
	if err != nil {
		return out
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() && name != path.Base(p) && filepath.Ext(name) == filepath.Ext(p) {
			out = append(out, path.Join(path.Dir(p), name))
		}
	}
	return out
}

// candidates are the ranges of src that may hold what c names: the declaration's own lines, or,
// for each place the quoted text begins, the range from there whose length is nearest c's.
func candidates(c Citation, src *source) []span {
	if d, ok := parseDecl(c.Symbol); ok && src.file != nil {
		if spans := src.decls(d); len(spans) > 0 {
			return spans
		}
	}
	var out []span
	for _, o := range src.occurrences(c.Symbol) {
		best := o.to
		for _, end := range src.ends(o.from, o.to) {
			if abs((end-o.from)-(c.To-c.From)) < abs((best-o.from)-(c.To-c.From)) {
				best = end
			}
		}
		out = append(out, span{o.from, best})
	}
	return out
}

// distance orders the places a citation was found: the cited file first, nearest the cited lines.
func distance(found, c Citation) int {
	d := abs(found.From - c.From)
	if found.Path != c.Path {
		d += 1 << 30
	}
	return d
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
