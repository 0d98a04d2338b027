package repocheck

// A `//go:linkname local remote` directive binds a body-less local declaration to a function
// of another package by its symbol name, and nothing checks that the two agree: if an upgrade of
// k8s.io/kubernetes changes the remote function's parameters, the program still builds, and the
// call passes the wrong values in the wrong registers. This file turns that into a test failure.
// It finds every such directive in the repository (a new one is covered without editing the
// test), type-checks the local declaration and the remote function in the source that go.mod
// pins, and compares the two signatures type by type: parameter names do not matter, package
// qualifiers are full import paths on both sides (their *v1.Pod and our *corev1.Pod are both
// *k8s.io/api/core/v1.Pod), and a method's receiver is its first parameter, as linkname sees it.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"
)

// A linkname is one `//go:linkname local remote` directive.
type linkname struct {
	pos    string // file:line of the directive, relative to the repository
	dir    string // the directory of the file, relative to the repository: its package
	local  string // the body-less function declared next to it
	remote string // the symbol: import/path.func, import/path.(*T).method or import/path.T.method
}

// findLinknames parses every Go file under root (skipping hidden directories and testdata/) and
// returns its two-argument go:linkname directives. Only real comments count: a directive quoted
// in a string literal is not one.
func findLinknames(root string) ([]linkname, error) {
	var out []linkname
	err := walkGoFiles(root, parser.ParseComments|parser.SkipObjectResolution, all, func(g goFile) error {
		f, fset, rel := g.file, g.fset, g.rel
		for _, group := range f.Comments {
			for _, c := range group.List {
				fields := strings.Fields(c.Text)
				if len(fields) == 0 || fields[0] != "//go:linkname" {
					continue // an ordinary comment
				}
				if len(fields) != 3 {
					return fmt.Errorf("%s:%d: %q: only `//go:linkname local remote` is checked; say what this one is for", rel, fset.Position(c.Pos()).Line, c.Text)
				}
				out = append(out, linkname{
					pos:    fmt.Sprintf("%s:%d", rel, fset.Position(c.Pos()).Line),
					dir:    filepath.Dir(rel),
					local:  fields[1],
					remote: fields[2],
				})
			}
		}
		return nil
	})
	return out, err
}

// splitSymbol splits a linkname symbol into the import path, the receiver's type name (empty for
// a function), whether the receiver is a pointer, and the function or method name. The import
// path ends at the first dot after its last slash, as in the linker's symbol names.
func splitSymbol(symbol string) (pkgPath, recv string, pointer bool, name string, err error) {
	slash := strings.LastIndex(symbol, "/")
	dot := strings.Index(symbol[slash+1:], ".")
	if dot < 0 {
		return "", "", false, "", fmt.Errorf("%q: no package path", symbol)
	}
	pkgPath, rest := symbol[:slash+1+dot], symbol[slash+1+dot+1:]
	switch {
	case strings.HasPrefix(rest, "(*"):
		recv, name, ok := strings.Cut(strings.TrimPrefix(rest, "(*"), ").")
		if !ok {
			return "", "", false, "", fmt.Errorf("%q: want (*T).method", symbol)
		}
		return pkgPath, recv, true, name, nil
	case strings.Contains(rest, "."):
		recv, name, _ := strings.Cut(rest, ".")
		return pkgPath, recv, false, name, nil
	default:
		return pkgPath, "", false, rest, nil
	}
}

// A signature as the linker sees it: the receiver, if any, is the first parameter.
type signature struct {
	params, results []types.Type
	variadic        bool
}

func linkerSignature(sig *types.Signature, recv types.Type) signature {
	var s signature
	if recv != nil {
		s.params = append(s.params, recv)
	}
	for v := range sig.Params().Variables() {
		s.params = append(s.params, v.Type())
	}
	for v := range sig.Results().Variables() {
		s.results = append(s.results, v.Type())
	}
	s.variadic = sig.Variadic()
	return s
}

// String prints the signature without parameter names, each type qualified by its import path.
func (s signature) String() string {
	list := func(ts []types.Type, variadic bool) string {
		var parts []string
		for i, t := range ts {
			if variadic && i == len(ts)-1 {
				parts = append(parts, "..."+typeString(t.(*types.Slice).Elem()))
				continue
			}
			parts = append(parts, typeString(t))
		}
		return strings.Join(parts, ", ")
	}
	out := "func(" + list(s.params, s.variadic) + ")"
	switch len(s.results) {
	case 0:
	case 1:
		out += " " + list(s.results, false)
	default:
		out += " (" + list(s.results, false) + ")"
	}
	return out
}

func typeString(t types.Type) string {
	if sig, ok := types.Unalias(t).(*types.Signature); ok {
		return linkerSignature(sig, nil).String()
	}
	return types.TypeString(t, func(p *types.Package) string { return p.Path() })
}

// compatible reports whether a value of the local type may stand for one of the remote type.
// They must be the same type, with two allowances that keep the ABI and that a declaration
// outside the remote package needs:
//   - unsafe.Pointer stands for any one-pointer type (pointer, channel, map, func): an
//     unexported *sourceFile or chan<- sourceUpdate cannot be spelled outside its package;
//   - an unexported named type stands for its underlying type (their defaultFunc is our
//     func(klog.Logger, *core.Pod) error).
func compatible(local, remote types.Type) bool {
	local, remote = types.Unalias(local), types.Unalias(remote)
	if b, ok := local.(*types.Basic); ok && b.Kind() == types.UnsafePointer {
		switch u := remote.Underlying().(type) {
		case *types.Pointer, *types.Chan, *types.Map, *types.Signature:
			return true
		case *types.Basic:
			return u.Kind() == types.UnsafePointer
		}
		return false
	}
	if n, ok := remote.(*types.Named); ok && !n.Obj().Exported() {
		if _, named := local.(*types.Named); !named {
			return compatible(local, n.Underlying())
		}
	}
	switch l := local.(type) {
	case *types.Pointer:
		r, ok := remote.(*types.Pointer)
		return ok && compatible(l.Elem(), r.Elem())
	case *types.Slice:
		r, ok := remote.(*types.Slice)
		return ok && compatible(l.Elem(), r.Elem())
	case *types.Array:
		r, ok := remote.(*types.Array)
		return ok && l.Len() == r.Len() && compatible(l.Elem(), r.Elem())
	case *types.Map:
		r, ok := remote.(*types.Map)
		return ok && compatible(l.Key(), r.Key()) && compatible(l.Elem(), r.Elem())
	case *types.Chan:
		r, ok := remote.(*types.Chan)
		return ok && l.Dir() == r.Dir() && compatible(l.Elem(), r.Elem())
	case *types.Signature:
		r, ok := remote.(*types.Signature)
		return ok && signatureProblem(linkerSignature(l, nil), linkerSignature(r, nil)) == ""
	default:
		// Named, basic, struct and interface types: the same type, printed with import paths.
		// The two sides may come from separate type-checks, so object identity cannot be used.
		return typeString(local) == typeString(remote)
	}
}

// signatureProblem returns "" when local may stand for remote, else the first difference.
func signatureProblem(local, remote signature) string {
	if len(local.params) != len(remote.params) {
		return fmt.Sprintf("%d parameters, want %d", len(local.params), len(remote.params))
	}
	if len(local.results) != len(remote.results) {
		return fmt.Sprintf("%d results, want %d", len(local.results), len(remote.results))
	}
	if local.variadic != remote.variadic {
		return fmt.Sprintf("variadic is %t, want %t", local.variadic, remote.variadic)
	}
	for i := range local.params {
		if !compatible(local.params[i], remote.params[i]) {
			return fmt.Sprintf("parameter %d is %s, want %s", i+1, typeString(local.params[i]), typeString(remote.params[i]))
		}
	}
	for i := range local.results {
		if !compatible(local.results[i], remote.results[i]) {
			return fmt.Sprintf("result %d is %s, want %s", i+1, typeString(local.results[i]), typeString(remote.results[i]))
		}
	}
	return ""
}

// remoteSignature finds symbol's function or method in the type-checked package pkg.
func remoteSignature(pkg *types.Package, symbol string) (signature, error) {
	_, recv, pointer, name, err := splitSymbol(symbol)
	if err != nil {
		return signature{}, err
	}
	if recv == "" {
		fn, ok := pkg.Scope().Lookup(name).(*types.Func)
		if !ok {
			return signature{}, fmt.Errorf("no func %s in %s", name, pkg.Path())
		}
		return linkerSignature(fn.Signature(), nil), nil
	}
	tn, ok := pkg.Scope().Lookup(recv).(*types.TypeName)
	if !ok {
		return signature{}, fmt.Errorf("no type %s in %s", recv, pkg.Path())
	}
	var recvType types.Type = tn.Type()
	if pointer {
		recvType = types.NewPointer(recvType)
	}
	// The symbol T.m exists for value receivers only; (*T).m for both (the compiler generates
	// a wrapper for a value receiver), with *T as the first parameter.
	obj, _, _ := types.LookupFieldOrMethod(recvType, false, pkg, name)
	fn, ok := obj.(*types.Func)
	if !ok {
		return signature{}, fmt.Errorf("no method %s in the method set of %s", name, typeString(recvType))
	}
	return linkerSignature(fn.Signature(), recvType), nil
}

// checkLinkname compares the local declaration with the remote function and returns an error
// that names both and prints both signatures when they differ.
func checkLinkname(l linkname, local *types.Func, remote *types.Package) error {
	want, err := remoteSignature(remote, l.remote)
	if err != nil {
		return fmt.Errorf("%s: %s → %s: %w", l.pos, l.local, l.remote, err)
	}
	got := linkerSignature(local.Signature(), nil)
	if problem := signatureProblem(got, want); problem != "" {
		return fmt.Errorf("%s: %s → %s: %s\n\tlocal:  %s\n\tpinned: %s", l.pos, l.local, l.remote, problem, got, want)
	}
	return nil
}

// localFunc finds the body-less declaration a directive names, in the package variant whose
// files include the directive's file.
func localFunc(pkgs []*packages.Package, root string, l linkname) (*types.Func, error) {
	file := filepath.Join(root, strings.Split(l.pos, ":")[0])
	for _, pkg := range pkgs {
		for _, f := range pkg.Syntax {
			if filepath.Clean(pkg.Fset.Position(f.Pos()).Filename) != file {
				continue
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || fd.Name.Name != l.local {
					continue
				}
				if fd.Body != nil {
					return nil, fmt.Errorf("%s: %s has a body: a pull linkname declares it without one", l.pos, l.local)
				}
				return pkg.TypesInfo.Defs[fd.Name].(*types.Func), nil
			}
			return nil, fmt.Errorf("%s: no func %s in %s", l.pos, l.local, file)
		}
	}
	return nil, fmt.Errorf("%s: no loaded package holds %s", l.pos, file)
}

const loadMode = packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
	packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo

// loadSource type-checks patterns from source (their imports come from export data) and fails on any
// package error, since a half-checked package could hide a mismatch.
func loadSource(t *testing.T, root string, tests bool, patterns ...string) []*packages.Package {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: loadMode, Dir: root, Tests: tests}, patterns...)
	require.NoError(t, err)
	require.Zero(t, packages.PrintErrors(pkgs), "the packages must type-check")
	return pkgs
}

// Every go:linkname in the repository agrees with the function it names, in the kubernetes
// source that go.mod pins: an upgrade that changes one fails here instead of corrupting memory.
func TestLinknamesMatchPinnedSource(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	links, err := findLinknames(root)
	require.NoError(t, err)
	require.NotEmpty(t, links, "chapter 06's tests use go:linkname; finding none means the scan is broken")

	dirs, remotes := map[string]bool{}, map[string]bool{}
	var dirPatterns, remotePatterns []string
	for _, l := range links {
		pkgPath, _, _, _, err := splitSymbol(l.remote)
		require.NoError(t, err, l.pos)
		if !dirs[l.dir] {
			dirs[l.dir] = true
			dirPatterns = append(dirPatterns, "./"+filepath.ToSlash(l.dir))
		}
		if !remotes[pkgPath] {
			remotes[pkgPath] = true
			remotePatterns = append(remotePatterns, pkgPath)
		}
	}
	// The directives sit in _test.go files too: the local side is loaded with its tests.
	locals := loadSource(t, root, true, dirPatterns...)
	byPath := map[string]*types.Package{}
	for _, pkg := range loadSource(t, root, false, remotePatterns...) {
		byPath[pkg.PkgPath] = pkg.Types
	}
	for _, l := range links {
		t.Run(l.local, func(t *testing.T) {
			local, err := localFunc(locals, root, l)
			require.NoError(t, err)
			pkgPath, _, _, _, _ := splitSymbol(l.remote)
			require.Contains(t, byPath, pkgPath)
			assert.NoError(t, checkLinkname(l, local, byPath[pkgPath]))
		})
	}
}

// The comparison itself, on a made-up pinned package and made-up local declarations: each case
// that must fail does, and its error names the function and prints both signatures.
func TestLinknameSignatures(t *testing.T) {
	const pinnedSrc = `package pinned

type handle struct{ n int }
type counter int
type callback func(n int, s string) error
type Exported struct{}

func decode(data []byte, n int) (*handle, error)
func (h *handle) list(prefix string) error
func (c counter) size() int
func run(cb callback) error
func use(e Exported, updates chan<- handle) error
func sum(xs ...int) int
`
	fset := token.NewFileSet()
	check := func(path, src string, imp types.Importer) *types.Package {
		f, err := parser.ParseFile(fset, path+".go", src, 0)
		require.NoError(t, err)
		pkg, err := (&types.Config{Importer: imp}).Check(path, fset, []*ast.File{f}, nil)
		require.NoError(t, err)
		return pkg
	}
	pinned := check("example.com/pinned", pinnedSrc, nil)
	imp := importerFunc(func(path string) (*types.Package, error) {
		if path == "unsafe" {
			return types.Unsafe, nil
		}
		if path == pinned.Path() {
			return pinned, nil
		}
		return nil, fmt.Errorf("no package %s here", path)
	})
	// localDecl type-checks one body-less declaration in a package of its own, as a linkname
	// user writes it, and returns it with its name.
	localDecl := func(t *testing.T, decl string) (*types.Func, string) {
		src := "package local\n\nimport (\n\t\"unsafe\"\n\n\t\"example.com/pinned\"\n)\n\nvar _ unsafe.Pointer\nvar _ pinned.Exported\n\n" + decl + "\n"
		name := strings.TrimPrefix(decl[:strings.Index(decl, "(")], "func ")
		fn, ok := check("example.com/local", src, imp).Scope().Lookup(name).(*types.Func)
		require.True(t, ok, decl)
		return fn, name
	}

	// want is the error's problem, then the local and the pinned signature it must print;
	// no want: the two agree.
	tests := []struct {
		name, local, remote string
		want                []string
	}{
		{"function, unexported result as unsafe.Pointer", "func decode(b []byte, n int) (unsafe.Pointer, error)", "decode", nil},
		{"pointer method, receiver first", "func list(h unsafe.Pointer, p string) error", "(*handle).list", nil},
		{"value method, receiver as its underlying type", "func size(c int) int", "counter.size", nil},
		{"value method through the pointer wrapper", "func size(c unsafe.Pointer) int", "(*counter).size", nil},
		{"unexported func type as its underlying type", "func run(f func(int, string) error) error", "run", nil},
		{"exported type by its import path, unexported channel as unsafe.Pointer", "func use(pinned.Exported, unsafe.Pointer) error", "use", nil},
		{"variadic", "func sum(...int) int", "sum", nil},

		{"a parameter too few", "func decode(b []byte) (unsafe.Pointer, error)", "decode", []string{
			"1 parameters, want 2", "func([]byte) (unsafe.Pointer, error)", "func([]byte, int) (*example.com/pinned.handle, error)"}},
		{"a parameter of another type", "func decode(b string, n int) (unsafe.Pointer, error)", "decode", []string{
			"parameter 1 is string, want []byte", "func(string, int) (unsafe.Pointer, error)", "func([]byte, int) (*example.com/pinned.handle, error)"}},
		{"a result too few", "func decode(b []byte, n int) unsafe.Pointer", "decode", []string{
			"1 results, want 2", "func([]byte, int) unsafe.Pointer", "func([]byte, int) (*example.com/pinned.handle, error)"}},
		{"receiver forgotten", "func list(p string) error", "(*handle).list", []string{
			"1 parameters, want 2", "func(string) error", "func(*example.com/pinned.handle, string) error"}},
		{"unsafe.Pointer for a value", "func size(c unsafe.Pointer) int", "counter.size", []string{
			"parameter 1 is unsafe.Pointer, want example.com/pinned.counter", "func(unsafe.Pointer) int", "func(example.com/pinned.counter) int"}},
		{"func type with another parameter", "func run(f func(int, int) error) error", "run", []string{
			"parameter 1 is func(int, int) error, want example.com/pinned.callback", "func(func(int, int) error) error", "func(example.com/pinned.callback) error"}},
		{"exported type spelled as its underlying type", "func use(struct{}, unsafe.Pointer) error", "use", []string{
			"parameter 1 is struct{}, want example.com/pinned.Exported", "func(struct{}, unsafe.Pointer) error", "func(example.com/pinned.Exported, chan<- example.com/pinned.handle) error"}},
		{"variadic declared as a slice", "func sum([]int) int", "sum", []string{
			"variadic is false, want true", "func([]int) int", "func(...int) int"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			local, name := localDecl(t, tc.local)
			l := linkname{pos: "fake.go:1", local: name, remote: "example.com/pinned." + tc.remote}
			err := checkLinkname(l, local, pinned)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "fake.go:1: "+name+" → example.com/pinned."+tc.remote+": "+tc.want[0])
			assert.Contains(t, err.Error(), "\tlocal:  "+tc.want[1]+"\n")
			assert.True(t, strings.HasSuffix(err.Error(), "\tpinned: "+tc.want[2]), "%s", err)
		})
	}

	// A symbol that does not name a function of the pinned package.
	for remote, want := range map[string]string{
		"handle.list": "no method list in the method set of example.com/pinned.handle", // a pointer method
		"decodeAll":   "no func decodeAll in example.com/pinned",                       // gone upstream
		"handle":      "no func handle in example.com/pinned",                          // a type
		"nothing.m":   "no type nothing in example.com/pinned",
	} {
		t.Run(remote, func(t *testing.T) {
			local, name := localDecl(t, "func list(h unsafe.Pointer, p string) error")
			err := checkLinkname(linkname{pos: "fake.go:1", local: name, remote: "example.com/pinned." + remote}, local, pinned)
			assert.ErrorContains(t, err, "fake.go:1: list → example.com/pinned."+remote+": "+want)
		})
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
