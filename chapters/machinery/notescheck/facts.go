package notescheck

// Facts are what a note says the source does, rather than which lines it points at: that a
// feature gate exists or is GA, that the evented PLEG requests a relist only for one kind of
// event, that the pod worker calls four methods. A citation cannot hold such a sentence, so the
// checks below read the same pinned source the citations are checked against, with go/ast, and
// facts_test.go ties each sentence of the notes (in both languages) to one of them.

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// GateStage is one entry of a feature gate's history in defaultVersionedKubernetesFeatureGates.
type GateStage struct {
	Version    string // "1.36"
	Default    bool
	PreRelease string // "Alpha", "Beta", "GA", "Deprecated"
	Locked     bool   // LockToDefault
}

func (g GateStage) String() string {
	s := fmt.Sprintf("%s %s, default %t", g.Version, g.PreRelease, g.Default)
	if g.Locked {
		s += ", locked"
	}
	return s
}

// Gate is a feature gate of pkg/features/kube_features.go: its declaration and its stages,
// oldest first.
type Gate struct {
	Name   string
	Stages []GateStage
}

// Latest is the gate's last stage, the one the pinned version runs with.
func (g Gate) Latest() GateStage {
	if len(g.Stages) == 0 {
		return GateStage{}
	}
	return g.Stages[len(g.Stages)-1]
}

// featuresFile declares the kubelet's feature gates, with the other kube components'.
const featuresFile = "pkg/features/kube_features.go"

// FeatureGate reads the gate name from pkg/features/kube_features.go. ok is false when the
// file declares no such gate.
func (s *Source) FeatureGate(name string) (g Gate, ok bool, err error) {
	src, err := s.loadPath(featuresFile)
	if err != nil {
		return Gate{}, false, err
	}
	return src.featureGate(name)
}

func (src *source) featureGate(name string) (Gate, bool, error) {
	if src.file == nil {
		return Gate{}, false, fmt.Errorf("not a Go file that parses")
	}
	g := Gate{Name: name}
	declared := false
	for _, d := range src.file.Decls {
		gd, isGen := d.(*ast.GenDecl)
		if !isGen {
			continue
		}
		for _, spec := range gd.Specs {
			vs, isValue := spec.(*ast.ValueSpec)
			if !isValue {
				continue
			}
			// A declaration: Name featuregate.Feature = "Name".
			if gd.Tok == token.CONST && len(vs.Names) == 1 && vs.Names[0].Name == name && len(vs.Values) == 1 {
				if lit, isLit := vs.Values[0].(*ast.BasicLit); isLit && lit.Value == strconv.Quote(name) {
					declared = true
				}
			}
			// Its stages: Name: {{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.GA, ...}, ...}.
			if gd.Tok != token.VAR || len(vs.Names) != 1 || vs.Names[0].Name != "defaultVersionedKubernetesFeatureGates" || len(vs.Values) != 1 {
				continue
			}
			m, isMap := vs.Values[0].(*ast.CompositeLit)
			if !isMap {
				continue
			}
			for _, e := range m.Elts {
				kv, isKV := e.(*ast.KeyValueExpr)
				if !isKV {
					continue
				}
				if key, isIdent := kv.Key.(*ast.Ident); !isIdent || key.Name != name {
					continue
				}
				specs, isList := kv.Value.(*ast.CompositeLit)
				if !isList {
					continue
				}
				for _, st := range specs.Elts {
					fields, isLit := st.(*ast.CompositeLit)
					if !isLit {
						continue
					}
					g.Stages = append(g.Stages, stageOf(fields))
				}
			}
		}
	}
	if !declared {
		return Gate{}, false, nil
	}
	return g, true, nil
}

func stageOf(fields *ast.CompositeLit) GateStage {
	var st GateStage
	for _, f := range fields.Elts {
		kv, isKV := f.(*ast.KeyValueExpr)
		if !isKV {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			continue
		}
		switch key.Name {
		case "Version":
			if call, isCall := kv.Value.(*ast.CallExpr); isCall && len(call.Args) == 1 {
				if lit, isLit := call.Args[0].(*ast.BasicLit); isLit {
					st.Version, _ = strconv.Unquote(lit.Value)
				}
			}
		case "Default":
			st.Default = identIs(kv.Value, "true")
		case "LockToDefault":
			st.Locked = identIs(kv.Value, "true")
		case "PreRelease":
			if sel, isSel := kv.Value.(*ast.SelectorExpr); isSel {
				st.PreRelease = sel.Sel.Name
			}
		}
	}
	return st
}

func identIs(e ast.Expr, name string) bool {
	id, isIdent := e.(*ast.Ident)
	return isIdent && id.Name == name
}

// loadPath reads a file of the repository at the version s reads.
func (s *Source) loadPath(path string) (*source, error) {
	file, err := s.File(path)
	if err != nil {
		return nil, err
	}
	return s.load(file)
}

// funcDecl finds the function or method a declaration text names ("func (e *EventedPLEG)
// processCRIEvents").
func (src *source) funcDecl(fn string) (*ast.FuncDecl, error) {
	d, ok := parseDecl(fn)
	if !ok || d.kind != "func" {
		return nil, fmt.Errorf("%q names no function", fn)
	}
	if src.file == nil {
		return nil, fmt.Errorf("not a Go file that parses")
	}
	for _, n := range src.file.Decls {
		if f, isFunc := n.(*ast.FuncDecl); isFunc && f.Name.Name == d.name && receiverType(f) == d.recv && f.Body != nil {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%s is not declared in the file", d)
}

// print renders a node as Go source on one line.
func (src *source) print(n ast.Node) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, src.fset, n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// Guards returns, for each call of a method or function named callee inside the function fn of
// the file at path, the conditions that must hold for that call to run: the condition of each
// if statement around it (negated in its else branch), and "!(c)" for each "if c { continue }"
// (or break, return, goto) earlier in a block around it. Conditions are printed as Go source.
func (s *Source) Guards(path, fn, callee string) ([][]string, error) {
	src, err := s.loadPath(path)
	if err != nil {
		return nil, err
	}
	return src.guards(fn, callee)
}

func (src *source) guards(fn, callee string) ([][]string, error) {
	f, err := src.funcDecl(fn)
	if err != nil {
		return nil, err
	}
	var out [][]string
	var walk func(n ast.Node, conds []string)
	walkList := func(list []ast.Stmt, conds []string) {
		conds = slices.Clone(conds)
		for _, st := range list {
			walk(st, conds)
			if ifs, isIf := st.(*ast.IfStmt); isIf && ifs.Else == nil && leaves(ifs.Body) {
				conds = append(conds, "!("+src.print(ifs.Cond)+")")
			}
		}
	}
	walk = func(n ast.Node, conds []string) {
		switch n := n.(type) {
		case nil:
			return
		case *ast.BlockStmt:
			walkList(n.List, conds)
			return
		case *ast.CaseClause:
			walkList(n.Body, conds)
			return
		case *ast.CommClause:
			walkList(n.Body, conds)
			return
		case *ast.IfStmt:
			walk(n.Init, conds)
			cond := src.print(n.Cond)
			walk(n.Body, append(slices.Clone(conds), cond))
			walk(n.Else, append(slices.Clone(conds), "!("+cond+")"))
			return
		case *ast.CallExpr:
			name := ""
			switch fun := n.Fun.(type) {
			case *ast.SelectorExpr:
				name = fun.Sel.Name
			case *ast.Ident:
				name = fun.Name
			}
			if name == callee {
				out = append(out, slices.Clone(conds))
			}
		}
		// Any other node: look inside it with the same conditions.
		ast.Inspect(n, func(c ast.Node) bool {
			if c == nil || c == n {
				return c != nil
			}
			walk(c, conds)
			return false
		})
	}
	walk(f.Body, nil)
	return out, nil
}

// leaves reports whether a block ends by leaving the code that follows it.
func leaves(b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	switch b.List[len(b.List)-1].(type) {
	case *ast.BranchStmt, *ast.ReturnStmt:
		return true
	}
	return false
}

// Callees returns, sorted, the names of the methods the function fn of the file at path calls
// on recv, an expression as the source spells it ("p.podSyncer").
func (s *Source) Callees(path, fn, recv string) ([]string, error) {
	src, err := s.loadPath(path)
	if err != nil {
		return nil, err
	}
	return src.callees(fn, recv)
}

func (src *source) callees(fn, recv string) ([]string, error) {
	f, err := src.funcDecl(fn)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if call, isCall := n.(*ast.CallExpr); isCall {
			if sel, isSel := call.Fun.(*ast.SelectorExpr); isSel && src.print(sel.X) == recv && !slices.Contains(out, sel.Sel.Name) {
				out = append(out, sel.Sel.Name)
			}
		}
		return true
	})
	sort.Strings(out)
	return out, nil
}

// Referrers returns, sorted, the functions of the package in directory dir (its Go files
// other than tests) whose bodies mention the selector ref ("kl.updateRuntimeUp"), called or
// passed as a value, each named as a citation names it ("func (kl *Kubelet) Run").
func (s *Source) Referrers(dir, ref string) ([]string, error) {
	root, err := s.File(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := s.load(filepath.Join(root, name))
		if err != nil {
			return nil, err
		}
		out = append(out, src.referrers(ref)...)
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

func (src *source) referrers(ref string) []string {
	if src.file == nil {
		return nil
	}
	var out []string
	for _, d := range src.file.Decls {
		f, isFunc := d.(*ast.FuncDecl)
		if !isFunc || f.Body == nil {
			continue
		}
		found := false
		ast.Inspect(f.Body, func(n ast.Node) bool {
			if sel, isSel := n.(*ast.SelectorExpr); isSel && src.print(sel) == ref {
				found = true
			}
			return !found
		})
		if found {
			out = append(out, funcName(f))
		}
	}
	return out
}

// funcName names a function as a citation does: "func (kl *Kubelet) Run" or "func startKubelet".
func funcName(f *ast.FuncDecl) string {
	if f.Recv == nil || len(f.Recv.List) == 0 {
		return "func " + f.Name.Name
	}
	r := f.Recv.List[0]
	recv := ""
	if len(r.Names) > 0 {
		recv = r.Names[0].Name + " "
	}
	star := ""
	if _, isStar := r.Type.(*ast.StarExpr); isStar {
		star = "*"
	}
	return fmt.Sprintf("func (%s%s%s) %s", recv, star, receiverType(f), f.Name.Name)
}

// InOrder checks that the snippets occur in the function fn of the file at path in this order,
// each after the end of the one before. White space is ignored, as in citations.
func (s *Source) InOrder(path, fn string, snippets ...string) error {
	src, err := s.loadPath(path)
	if err != nil {
		return err
	}
	return src.inOrder(fn, snippets...)
}

func (src *source) inOrder(fn string, snippets ...string) error {
	f, err := src.funcDecl(fn)
	if err != nil {
		return err
	}
	body := squash(strings.Join(src.lines[src.lineOf(f.Pos())-1:src.lineOf(f.End()-1)], "\n"))
	at := 0
	for i, sn := range snippets {
		j := strings.Index(body[at:], squash(sn))
		if j < 0 {
			if i > 0 && strings.Contains(body, squash(sn)) {
				return fmt.Errorf("%s: %q is not after %q", fn, sn, snippets[i-1])
			}
			return fmt.Errorf("%s: %q is not in it", fn, sn)
		}
		at += j + len(squash(sn))
	}
	return nil
}

// Unconditional checks that the function fn of the file at path has the statement stmt at the
// top level of its body: no if, loop or switch decides whether it runs.
func (s *Source) Unconditional(path, fn, stmt string) error {
	src, err := s.loadPath(path)
	if err != nil {
		return err
	}
	return src.unconditional(fn, stmt)
}

func (src *source) unconditional(fn, stmt string) error {
	f, err := src.funcDecl(fn)
	if err != nil {
		return err
	}
	want := squash(stmt)
	for _, st := range f.Body.List {
		if squash(strings.Join(src.lines[src.lineOf(st.Pos())-1:src.lineOf(st.End()-1)], "\n")) == want {
			return nil
		}
	}
	body := squash(strings.Join(src.lines[src.lineOf(f.Pos())-1:src.lineOf(f.End()-1)], "\n"))
	if strings.Contains(body, want) {
		return fmt.Errorf("%s: %q runs under a condition", fn, stmt)
	}
	return fmt.Errorf("%s: %q is not in it", fn, stmt)
}

// Excerpt checks a trimmed excerpt of the function fn of the file at path, as a note quotes it:
// every line of code (a trailing // comment, which the note may add, is left out, and so are
// lines holding only a comment, a brace or "...") is in the function, in the same order.
func (s *Source) Excerpt(path, fn string, excerpt string) error {
	src, err := s.loadPath(path)
	if err != nil {
		return err
	}
	return src.excerpt(fn, excerpt)
}

func (src *source) excerpt(fn, excerpt string) error {
	var lines []string
	for _, l := range strings.Split(excerpt, "\n") {
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if l == "" || l == "}" || l == "{" || l == "..." || l == "…" {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return fmt.Errorf("the excerpt has no code")
	}
	return src.inOrder(fn, lines...)
}
