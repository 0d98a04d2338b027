package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// entry is one file, directory or symbolic link of a layer.
type entry struct {
	// Path is the path in the image, absolute.
	Path string
	// Source is the file on this machine whose content the entry has, or Data the content
	// itself (neither for a directory or a link).
	Source string
	Data   []byte
	// Link is a symbolic link's target.
	Link string
	// Mode has the type (fs.ModeDir, fs.ModeSymlink or none) and the permission bits.
	Mode fs.FileMode
}

// contentDigest is the digest of a regular file's content, "" for other entries.
func (e entry) contentDigest() (string, error) {
	if e.Data != nil {
		sum := sha256.Sum256(e.Data)
		return hex.EncodeToString(sum[:]), nil
	}
	if e.Source == "" {
		return "", nil
	}
	f, err := os.Open(e.Source)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// layer is a named set of entries, written as one tar in path order.
type layer struct {
	name    string
	entries []entry
}

// plan lays out an image: first a layer of what comes from the library root (the loader,
// shared libraries, tools), if anything does, then a layer with the binary. Images whose
// libraries are the same get the same first layer, which containerd then stores once.
func plan(spec Spec, opts Options) ([]layer, error) {
	binary := filepath.Join(opts.Binaries, spec.Name)
	st, err := os.Stat(binary)
	if err != nil {
		return nil, fmt.Errorf("the image's binary: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("the image's binary %s is not a regular file", binary)
	}

	root := newRootFiles(opts.LibraryRoot)
	if err := root.addDependencies(binary); err != nil {
		return nil, err
	}
	for _, tool := range spec.Tools {
		if err := root.addTool(tool); err != nil {
			return nil, err
		}
	}
	if len(spec.Tools) > 0 {
		// iptables loads its matches and targets (-m comment, -j MASQUERADE, …) from this
		// directory with dlopen: no DT_NEEDED names them.
		if err := root.addExtensions("xtables"); err != nil {
			return nil, err
		}
	}

	var layers []layer
	if len(root.entries) > 0 {
		layers = append(layers, layer{name: "libraries", entries: withParents(root.entries)})
	}
	files := []entry{
		{Path: spec.Path, Source: binary, Mode: 0o755},
		// Some programs write to os.TempDir; a container's root file system has no /tmp unless
		// the image brings one.
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
	layers = append(layers, layer{name: spec.Name, entries: withParents(files)})
	return layers, nil
}

// withParents adds the directories above each entry and sorts them by path, so that a directory
// always comes before what is in it.
func withParents(entries []entry) []entry {
	byPath := map[string]entry{}
	for _, e := range entries {
		byPath[e.Path] = e
		for dir := path.Dir(e.Path); dir != "/"; dir = path.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = entry{Path: dir, Mode: fs.ModeDir | 0o755}
			}
		}
	}
	out := make([]entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// opener returns a function that writes the layer's tar afresh each time it is called (the
// image library reads a layer more than once: to detect compression, to digest it, to write it).
func (l layer) opener() func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		r, w := io.Pipe()
		go func() { w.CloseWithError(writeTar(w, l.entries)) }()
		return r, nil
	}
}

// writeTar writes entries as a tar stream: owned by root, dated epoch, so that the same entries
// always give the same bytes.
func writeTar(w io.Writer, entries []entry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(e.Path, "/"),
			Mode:    int64(e.Mode.Perm()),
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		if e.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		var content io.ReadCloser
		switch {
		case e.Mode.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case e.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.Link
		case e.Data != nil:
			hdr.Typeflag, hdr.Size, content = tar.TypeReg, int64(len(e.Data)), io.NopCloser(bytes.NewReader(e.Data))
		default:
			f, err := os.Open(e.Source)
			if err != nil {
				return err
			}
			st, err := f.Stat()
			if err != nil {
				f.Close()
				return err
			}
			hdr.Typeflag, hdr.Size, content = tar.TypeReg, st.Size(), f
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if content != nil {
			_, err := io.Copy(tw, content)
			content.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", e.Source, err)
			}
		}
	}
	return tw.Close()
}

// rootFiles collects the files an image needs from the library root.
type rootFiles struct {
	root    string
	entries []entry
	// placed maps a file of the root (its resolved path) to where it already is in the image,
	// and each image path to true, so that nothing is added twice.
	placed map[string]string
	paths  map[string]bool
	// done holds the ELF files whose dependencies were added.
	done map[string]bool
}

func newRootFiles(root string) *rootFiles {
	return &rootFiles{root: root, placed: map[string]string{}, paths: map[string]bool{}, done: map[string]bool{}}
}

// add puts the root's file real (resolved, no links) at imagePath: the file itself the first
// time, a symbolic link to where it already is after that.
func (r *rootFiles) add(imagePath, real string) error {
	if r.paths[imagePath] {
		return nil
	}
	r.paths[imagePath] = true
	if at, ok := r.placed[real]; ok {
		r.entries = append(r.entries, entry{Path: imagePath, Link: relativeLink(imagePath, at), Mode: fs.ModeSymlink | 0o777})
		return nil
	}
	st, err := os.Stat(filepath.Join(r.root, real))
	if err != nil {
		return err
	}
	r.placed[real] = imagePath
	r.entries = append(r.entries, entry{Path: imagePath, Source: filepath.Join(r.root, real), Mode: st.Mode().Perm()})
	return r.addDependencies(filepath.Join(r.root, real))
}

// relativeLink is a link target for from that points at to: relative within one directory,
// absolute otherwise.
func relativeLink(from, to string) string {
	if path.Dir(from) == path.Dir(to) {
		return path.Base(to)
	}
	return to
}

// addDependencies adds what the dynamic loader loads for the ELF file: the loader itself
// (PT_INTERP) and the DT_NEEDED libraries, recursively. A static binary needs nothing.
func (r *rootFiles) addDependencies(file string) error {
	if r.done[file] {
		return nil
	}
	r.done[file] = true
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable or library: %w", file, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		data, err := io.ReadAll(p.Open())
		if err != nil {
			return fmt.Errorf("%s: its loader: %w", file, err)
		}
		interp := strings.TrimRight(string(data), "\x00")
		real, err := r.resolve(interp)
		if err != nil {
			return fmt.Errorf("%s needs the loader %s: %w", file, interp, err)
		}
		if err := r.add(interp, real); err != nil {
			return err
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	dirs, err := libraryDirs(f.Machine)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, soname := range needed {
		if err := r.addLibrary(file, soname, dirs); err != nil {
			return err
		}
	}
	return nil
}

// libraryDirs are the directories where Debian's dynamic loader looks for a library when there
// is no /etc/ld.so.cache (an image has none): its multiarch directories, then the classic ones.
func libraryDirs(machine elf.Machine) ([]string, error) {
	triplet, ok := map[elf.Machine]string{
		elf.EM_X86_64:  "x86_64-linux-gnu",
		elf.EM_AARCH64: "aarch64-linux-gnu",
		elf.EM_PPC64:   "powerpc64le-linux-gnu",
		elf.EM_S390:    "s390x-linux-gnu",
		elf.EM_RISCV:   "riscv64-linux-gnu",
	}[machine]
	if !ok {
		return nil, fmt.Errorf("no Debian multiarch directory known for %v", machine)
	}
	return []string{"/lib/" + triplet, "/usr/lib/" + triplet, "/lib64", "/usr/lib64", "/lib", "/usr/lib"}, nil
}

// addLibrary finds soname in the first of dirs that has it and adds it at that path.
func (r *rootFiles) addLibrary(neededBy, soname string, dirs []string) error {
	if strings.Contains(soname, "/") {
		dirs = []string{"/"}
	}
	for _, dir := range dirs {
		p := path.Join(dir, soname)
		real, err := r.resolve(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		return r.add(p, real)
	}
	return fmt.Errorf("%s needs %s, which is in none of %s under the library root %s", neededBy, soname, strings.Join(dirs, ", "), r.root)
}

// addTool adds a program of the root at its path: a symbolic link to the file it resolves to
// (Debian's iptables is /usr/sbin/iptables → /etc/alternatives/iptables → iptables-nft →
// xtables-nft-multi), which goes in at its own path. A multi-call binary such as
// xtables-nft-multi picks its job from the name it was run by, which a link keeps.
func (r *rootFiles) addTool(tool Tool) error {
	real, err := r.resolve(tool.Path)
	if errors.Is(err, fs.ErrNotExist) && !tool.Required {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s in the library root %s (install iptables and nftables there): %w", tool.Path, r.root, err)
	}
	if err := r.add(real, real); err != nil {
		return err
	}
	if tool.Path != real && !r.paths[tool.Path] {
		r.paths[tool.Path] = true
		r.entries = append(r.entries, entry{Path: tool.Path, Link: relativeLink(tool.Path, real), Mode: fs.ModeSymlink | 0o777})
	}
	return nil
}

// addExtensions adds every file of the directory dir inside the root's library directories
// (e.g. /usr/lib/x86_64-linux-gnu/xtables), with their dependencies.
func (r *rootFiles) addExtensions(dir string) error {
	var found []string
	for _, base := range []string{"/usr/lib", "/lib"} {
		matches, err := filepath.Glob(filepath.Join(r.root, base, "*", dir))
		if err != nil {
			return err
		}
		found = append(found, matches...)
	}
	if len(found) == 0 {
		return fmt.Errorf("no %s directory in the library root %s's /usr/lib/*/", dir, r.root)
	}
	for _, d := range found {
		rel, err := filepath.Rel(r.root, d)
		if err != nil {
			return err
		}
		real, err := r.resolve("/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		files, err := os.ReadDir(filepath.Join(r.root, real))
		if err != nil {
			return err
		}
		for _, f := range files {
			p := path.Join(real, f.Name())
			target, err := r.resolve(p)
			if err != nil {
				return err
			}
			if err := r.add(p, target); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolve follows the symbolic links of name inside the root, as a chroot would (an absolute
// target starts again at the root), and returns the path, inside the root, of what it names.
func (r *rootFiles) resolve(name string) (string, error) {
	rest := strings.Split(strings.TrimPrefix(path.Clean("/"+name), "/"), "/")
	cur := "/"
	for links := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		st, err := os.Lstat(filepath.Join(r.root, next))
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", name)
		}
		target, err := os.Readlink(filepath.Join(r.root, next))
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, nil
}
