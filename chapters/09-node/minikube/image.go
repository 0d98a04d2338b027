package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/spf13/cobra"
)

// `minikube image build` and `minikube image ls`.
//
// minikube's build (cmd/minikube/cmd/image.go, buildImageCmd; pkg/minikube/machine/build_images.go,
// transferAndBuildImage; pkg/minikube/cruntime/containerd.go, BuildImage) tars the context
// directory on your machine, honouring its .dockerignore (third_party/go-dockerclient,
// CreateTarStream), copies the tar into the node, unpacks it under /var/lib/minikube/build, and
// on the containerd runtime runs BuildKit there (`buildctl build --frontend dockerfile.v0 --local
// context=DIR --local dockerfile=DIR --output type=image,name=TAG`): the image lands in the node's
// containerd, where the kubelet finds it (imagePullPolicy: Never or IfNotPresent). -f names the
// Dockerfile relative to the context; a tag without ":" gets ":latest"; the tag is normalised as
// docker does (docker.io/library/…).
//
// This node has no BuildKit and no registry, so the build is done here with go-containerregistry
// and the image imported into the node's containerd (`ctr --namespace k8s.io images import`),
// which is where BuildKit's output goes. What that can build is what needs no container to run
// in: FROM scratch, then COPY from the context, ENTRYPOINT, CMD, USER, ENV, WORKDIR, LABEL — the
// image of a binary compiled on your machine. Any other instruction (RUN, ADD, a FROM of a real
// base, a second stage…) is refused with the line that holds it. minikube itself only logs a
// failed build as a warning and exits 0 (machine.BuildImage); this one exits non-zero, so that a
// script notices.

func (o *options) imageCommand(ctx context.Context) *cobra.Command {
	cmd := &cobra.Command{Use: "image COMMAND", Short: "Manage images"}
	var tag, file string
	build := &cobra.Command{
		Use:     "build PATH",
		Short:   "Build a container image in minikube",
		Long:    "Build a container image, using the container runtime.\nHere: FROM scratch, COPY, ENTRYPOINT, CMD, USER, ENV, WORKDIR and LABEL, built on this machine and imported into the node's containerd.",
		Example: "minikube image build -t kubelet-walkthrough/client:dev -f examples/rbac/Dockerfile .",
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usage("Please provide a path or url to build")
			}
			return o.buildImage(ctx, args[0], file, tag)
		},
	}
	build.Flags().StringVarP(&tag, "tag", "t", "", "Tag to apply to the new image (optional)")
	build.Flags().StringVarP(&file, "file", "f", "", "Path to the Dockerfile to use (optional)")
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List images",
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return o.listImages(ctx) },
	}
	cmd.AddCommand(build, ls)
	return cmd
}

// buildImage builds the image of a context directory and imports it into the node.
func (o *options) buildImage(ctx context.Context, contextDir, file, tag string) error {
	n, err := o.running()
	if err != nil {
		return err
	}
	if tag == "" {
		return usage("this minikube needs a tag for the image (-t NAME:TAG): the kubelet finds an image by its name")
	}
	if !strings.Contains(tag, ":") {
		tag += ":latest" // cruntime/containerd.go, BuildImage: "add default tag if missing"
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return usage("couldn't parse image reference %q: %v", tag, err)
	}
	// The Dockerfile is relative to the context (build_images.go: path.Join(context, file)).
	if file == "" {
		file = "Dockerfile"
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(contextDir, file)
	}
	img, err := buildFromDockerfile(contextDir, file, o.out)
	if err != nil {
		return &exitError{code: 1, reason: "GUEST_IMAGE_BUILD", msg: "Failed to build image: " + err.Error()}
	}
	// The archive streams into ctr in the node; nothing is written on either side.
	r, w := io.Pipe()
	go func() { w.CloseWithError(tarball.Write(ref, img, w)) }()
	c := n.Command(ctx, "ctr", "--namespace", "k8s.io", "images", "import", "-")
	c.Stdin = r
	out, err := c.CombinedOutput()
	_ = r.Close()
	if err != nil {
		return &exitError{code: 1, reason: "GUEST_IMAGE_BUILD", msg: fmt.Sprintf("Failed to load the image into the node: %v: %s", err, strings.TrimSpace(string(out)))}
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(o.out, "Built %s (%s) into the node's containerd\n", strings.Replace(ref.Name(), "index.docker.io/", "docker.io/", 1), digest)
	return nil
}

// listImages is `minikube image ls`: the tags of the images the node's runtime has, one a line
// (machine.ListImages → cruntime ListImages: `crictl images --output json`).
func (o *options) listImages(ctx context.Context) error {
	n, err := o.running()
	if err != nil {
		return err
	}
	out, err := n.Output(ctx, "crictl", "images", "--output", "json")
	if err != nil {
		return err
	}
	var list struct {
		Images []struct {
			RepoTags []string `json:"repoTags"`
		} `json:"images"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return fmt.Errorf("crictl images: %w", err)
	}
	var tags []string
	for _, i := range list.Images {
		tags = append(tags, i.RepoTags...)
	}
	slices.Sort(tags)
	for _, t := range tags {
		fmt.Fprintln(o.out, t)
	}
	return nil
}

// instruction is one line of a Dockerfile: its keyword (upper case), its arguments as written,
// and the line it starts on.
type instruction struct {
	keyword, args string
	line          int
}

// parseDockerfile splits a Dockerfile into instructions: comments and blank lines dropped, lines
// ending in a backslash continued.
func parseDockerfile(r io.Reader) ([]instruction, error) {
	var out []instruction
	var cur strings.Builder
	start := 0
	s := bufio.NewScanner(r)
	for lineNo := 1; s.Scan(); lineNo++ {
		line := strings.TrimSpace(s.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = lineNo
		}
		if strings.HasPrefix(line, "#") { // a comment inside a continued instruction
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		keyword, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{keyword: strings.ToUpper(keyword), args: strings.TrimSpace(args), line: start})
		cur.Reset()
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: the last instruction ends in a backslash", start)
	}
	return out, nil
}

// splitArgs reads an instruction's arguments in exec form (a JSON array) or as words.
func splitArgs(args string) ([]string, bool, error) {
	if strings.HasPrefix(args, "[") {
		var words []string
		if err := json.Unmarshal([]byte(args), &words); err != nil {
			return nil, true, fmt.Errorf("not a JSON array of strings: %s", args)
		}
		return words, true, nil
	}
	return strings.Fields(args), false, nil
}

// buildFromDockerfile builds the image a Dockerfile describes, from the files of the context
// directory that its .dockerignore lets through.
func buildFromDockerfile(contextDir, dockerfile string, log io.Writer) (v1.Image, error) {
	f, err := os.Open(dockerfile)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	steps, err := parseDockerfile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dockerfile, err)
	}
	if len(steps) == 0 || steps[0].keyword != "FROM" {
		return nil, fmt.Errorf("%s: the first instruction must be FROM", dockerfile)
	}
	ignore, err := readDockerignore(contextDir)
	if err != nil {
		return nil, err
	}
	config := v1.Config{WorkingDir: "/", Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
	img := empty.Image
	for i, st := range steps {
		fmt.Fprintf(log, "#%d [%d/%d] %s %s\n", i+1, i+1, len(steps), st.keyword, st.args)
		where := fmt.Sprintf("%s:%d", filepath.Base(dockerfile), st.line)
		switch st.keyword {
		case "FROM":
			if i > 0 {
				return nil, fmt.Errorf("%s: a second FROM (a multi-stage build) is not supported here: compile on your machine and COPY the result", where)
			}
			if strings.ToLower(strings.Fields(st.args + " x")[0]) != "scratch" {
				return nil, fmt.Errorf("%s: FROM %s: only FROM scratch here — this minikube has no registry to pull a base image from", where, st.args)
			}
		case "COPY":
			words, _, err := splitArgs(st.args)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			uid, gid := 0, 0
			for len(words) > 0 && strings.HasPrefix(words[0], "--") {
				opt := words[0]
				words = words[1:]
				if owner, ok := strings.CutPrefix(opt, "--chown="); ok {
					if _, err := fmt.Sscanf(owner, "%d:%d", &uid, &gid); err != nil {
						return nil, fmt.Errorf("%s: --chown=%s: only numeric UID:GID here (the image has no /etc/passwd)", where, owner)
					}
					continue
				}
				return nil, fmt.Errorf("%s: COPY %s is not supported here", where, opt)
			}
			if len(words) < 2 {
				return nil, fmt.Errorf("%s: COPY needs a source and a destination", where)
			}
			layer, err := copyLayer(contextDir, words[:len(words)-1], words[len(words)-1], config.WorkingDir, ignore, uid, gid)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
				Created: v1.Time{Time: time.Now().UTC()}, CreatedBy: "COPY " + st.args + " # minikube image build"}}); err != nil {
				return nil, err
			}
		case "ENTRYPOINT", "CMD":
			words, exec, err := splitArgs(st.args)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if !exec { // the shell form, as docker runs it
				words = []string{"/bin/sh", "-c", st.args}
			}
			if st.keyword == "ENTRYPOINT" {
				config.Entrypoint = words
			} else {
				config.Cmd = words
			}
		case "USER":
			config.User = st.args
		case "WORKDIR":
			config.WorkingDir = path.Join(config.WorkingDir, st.args)
		case "ENV":
			key, value, ok := strings.Cut(st.args, "=")
			if !ok {
				key, value, _ = strings.Cut(st.args, " ")
			}
			config.Env = append(config.Env, strings.TrimSpace(key)+"="+strings.Trim(strings.TrimSpace(value), `"`))
		case "LABEL":
			key, value, _ := strings.Cut(st.args, "=")
			if config.Labels == nil {
				config.Labels = map[string]string{}
			}
			config.Labels[strings.Trim(key, `"`)] = strings.Trim(value, `"`)
		default:
			return nil, fmt.Errorf("%s: %s is not supported by this minikube's image build (it has no container to run a build step in): "+
				"FROM scratch, COPY, ENTRYPOINT, CMD, USER, ENV, WORKDIR and LABEL are — compile on your machine and COPY the result", where, st.keyword)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Config, cf.Created = runtime.GOARCH, "linux", config, v1.Time{Time: time.Now().UTC()}
	return mutate.ConfigFile(img, cf)
}

// copyLayer is the layer of one COPY: each source (a file or a directory of the context, globs
// allowed) at dest, as docker places them — into dest/ when dest ends in a slash or there are
// several sources, a directory's contents rather than the directory itself.
func copyLayer(contextDir string, sources []string, dest, workdir string, ignore *dockerignore, uid, gid int) (v1.Layer, error) {
	if !path.IsAbs(dest) {
		dest = path.Join(workdir, dest) + map[bool]string{true: "/", false: ""}[strings.HasSuffix(dest, "/")]
	}
	intoDir := strings.HasSuffix(dest, "/") || len(sources) > 1
	var files []layerFile
	for _, src := range sources {
		matches, err := filepath.Glob(filepath.Join(contextDir, filepath.FromSlash(path.Clean("/"+src))))
		if err != nil {
			return nil, err
		}
		var kept []string
		for _, m := range matches {
			rel, _ := filepath.Rel(contextDir, m)
			// An excluded directory still holds what an exception lets back in.
			if !ignore.excluded(filepath.ToSlash(rel)) || (ignore.hasExceptions() && isDir(m)) {
				kept = append(kept, m)
			}
		}
		if len(kept) == 0 {
			return nil, fmt.Errorf("COPY %s: no such file in the build context %s (or .dockerignore leaves it out)", src, contextDir)
		}
		intoDir = intoDir || len(kept) > 1
		for _, m := range kept {
			st, err := os.Stat(m)
			if err != nil {
				return nil, err
			}
			if !st.IsDir() {
				target := dest
				if intoDir {
					target = path.Join(dest, filepath.Base(m))
				}
				files = append(files, layerFile{path: path.Clean(target), source: m, mode: st.Mode()})
				continue
			}
			err = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(contextDir, p)
				if p != m && ignore.excluded(filepath.ToSlash(rel)) {
					if d.IsDir() && !ignore.hasExceptions() {
						return filepath.SkipDir
					}
					return nil
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				inner, _ := filepath.Rel(m, p)
				files = append(files, layerFile{path: path.Join(dest, filepath.ToSlash(inner)), source: p, mode: info.Mode()})
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return tarLayer(files, uid, gid) })
}

// readDockerignore reads the context's .dockerignore (none: nothing is ignored).
func readDockerignore(contextDir string) (*dockerignore, error) {
	data, err := os.ReadFile(filepath.Join(contextDir, ".dockerignore"))
	if errors.Is(err, fs.ErrNotExist) {
		return &dockerignore{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseDockerignore(string(data)), nil
}

// dockerignore is a .dockerignore's patterns, applied as docker applies them (moby's
// patternmatcher, MatchesOrParentMatches): each pattern is a path.Match pattern relative to the
// context, where ** stands for any number of directories; a pattern that matches a directory
// matches everything in it; the last pattern that matches decides, and a pattern starting with
// "!" lets a path back in.
type dockerignore struct {
	patterns []ignorePattern
}

type ignorePattern struct {
	parts     []string
	exception bool
}

func parseDockerignore(text string) *dockerignore {
	d := &dockerignore{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := ignorePattern{}
		if rest, ok := strings.CutPrefix(line, "!"); ok {
			p.exception, line = true, strings.TrimSpace(rest)
		}
		line = strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(line)), "/")
		p.parts = strings.Split(line, "/")
		d.patterns = append(d.patterns, p)
	}
	return d
}

func (d *dockerignore) hasExceptions() bool {
	return slices.ContainsFunc(d.patterns, func(p ignorePattern) bool { return p.exception })
}

// excluded says whether a path of the context (slash-separated, relative) stays out.
func (d *dockerignore) excluded(rel string) bool {
	parts := strings.Split(path.Clean(rel), "/")
	out := false
	for _, p := range d.patterns {
		// The path, or one of the directories it is in.
		for n := 1; n <= len(parts); n++ {
			if matchParts(p.parts, parts[:n]) {
				out = !p.exception
				break
			}
		}
	}
	return out
}

// matchParts matches path components against pattern components, ** matching any number.
func matchParts(pattern, parts []string) bool {
	if len(pattern) == 0 {
		return len(parts) == 0
	}
	if pattern[0] == "**" {
		for i := 0; i <= len(parts); i++ {
			if matchParts(pattern[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	ok, err := path.Match(pattern[0], parts[0])
	return err == nil && ok && matchParts(pattern[1:], parts[1:])
}

// layerFile is one file of a COPY layer: where it goes in the image, where it comes from.
type layerFile struct {
	path   string
	source string
	mode   fs.FileMode
}

// tarLayer writes a layer's files as a tar, with the directories that lead to them, owned by
// uid:gid, dated 1970 so that the same files give the same layer.
func tarLayer(files []layerFile, uid, gid int) (io.ReadCloser, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	dirs := map[string]bool{}
	var addDirs func(dir string) error
	addDirs = func(dir string) error {
		if dir == "/" || dir == "." || dirs[dir] {
			return nil
		}
		if err := addDirs(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755, Uid: uid, Gid: gid, ModTime: epoch})
	}
	for _, f := range files {
		if f.mode.IsDir() {
			if err := addDirs(f.path); err != nil {
				return nil, err
			}
			continue
		}
		if err := addDirs(path.Dir(f.path)); err != nil {
			return nil, err
		}
		if !f.mode.IsRegular() {
			return nil, fmt.Errorf("COPY %s: only regular files and directories are copied here", f.source)
		}
		data, err := os.ReadFile(f.source)
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.path, "/"), Mode: int64(f.mode.Perm()), Size: int64(len(data)), Uid: uid, Gid: gid, ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
