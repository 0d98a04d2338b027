package main

import (
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/notescheck"
)

// citation is one citation broken at the next release: where it moved, or why it is gone.
type citation struct {
	cite    notescheck.Citation
	problem string              // what notescheck says is wrong with it at the next release
	now     notescheck.Citation // where it points now, when moved
	gone    string              // why there is no such place, when not
}

// citations checks every citation under root (notescheck's: the notes, the READMEs, the chapters'
// Go comments) against kubernetes next, and locates each one that breaks. It returns how many it
// checked, the broken ones, and problems of form (which hold whatever the release).
func citations(root, pinned, next string) (int, []citation, []error) {
	cites, problems := notescheck.Citations(root)
	src := notescheck.NewSource(pinned, next)
	var broken []citation
	for _, c := range cites {
		err := src.Check(c)
		if err == nil {
			continue
		}
		b := citation{cite: c, problem: err.Error()}
		if now, err := src.Locate(c); err == nil {
			b.now = now
		} else {
			b.gone = err.Error()
		}
		broken = append(broken, b)
	}
	return len(cites), broken, problems
}
