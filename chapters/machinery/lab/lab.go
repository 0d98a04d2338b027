// Package lab is the machinery that lets real minikube run here, offline and leaving nothing
// behind: a laptop with Docker and minikube, as workshop attendees have one, made on this
// machine. It starts a real Docker engine (Debian's dockerd, package dockerd) in namespaces of
// its own, loads the base image made here (package images: kicbase's equivalent), gives
// minikube a home whose cache holds the Kubernetes binaries and images built here from pinned
// sources, and runs commands there — `minikube start …`, `kubectl …`, a chapter — exactly as a
// reader types them. The offline settings reach minikube only through its environment
// (MINIKUBE_*), never through the commands.
//
// Nothing in the lab imitates minikube or Docker: they are the real programs, and the lab only
// makes what they would otherwise download.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/lab/dockerd"
)

// Options configure a lab.
type Options struct {
	// Dir is the run directory; "" makes a temporary one, removed when the lab stops.
	Dir string
	// Components is where `make node-components` put the lab's parts (.bin/node): the base
	// image's archive, minikube's cache, the runc shim.
	Components string
	// Minikube is the minikube binary (.bin/minikube, built from its module).
	Minikube string
	// Log receives what the lab does, one line a step; nil discards it.
	Log io.Writer
	// Attendee, when not nil, runs the lab's commands as a workshop attendee: a normal user in
	// the group of the engine's socket, not root (attendee.go).
	Attendee *Attendee
	// RemoteEngine gives the lab's commands the engine at DOCKER_HOST=tcp://RemoteEngineAddress,
	// in the engine's network namespace, instead of its socket. minikube then takes the path of
	// Docker Desktop on macOS and Windows (an engine it cannot reach the containers of:
	// driver.NeedsPortForward): the kubeconfig's server, `minikube ssh` and the image commands
	// go through the node's ports published on random ports of 127.0.0.1.
	RemoteEngine bool
}

// RemoteEngineAddress is where the engine serves its API with Options.RemoteEngine: Docker's
// unencrypted port, on the loopback of the engine's own network namespace, which no process
// outside the lab reaches.
const RemoteEngineAddress = "127.0.0.1:2375"

// Layout of the components directory, as the Makefile writes it.
const (
	// BaseImageArchive is the base image (make node-base-image).
	BaseImageArchive = "kicbase.tar"
	// CacheDir is minikube's cache: cache/linux/amd64/<version>/{kubeadm,kubelet,kubectl},
	// cache/images/amd64/<image> (make node-cache).
	CacheDir = "minikube-cache"
	// ShimPath is the runc shim (make node-runcshim).
	ShimPath = "bin/runcshim"
	// BaseImageRef names the base image: the lab gives it to minikube as MINIKUBE_BASE_IMAGE.
	BaseImageRef = "kubelet-walkthrough/kicbase:v0.0.50-lab"
)

// Lab is a running lab.
type Lab struct {
	// Dir is the run directory.
	Dir    string
	Engine *dockerd.Engine
	opts   Options
	temp   bool
	env    []string
	// netNS is the engine's network namespace (its /proc link), kept to tell after Stop whether a
	// process is still in it.
	netNS string
	// laptop holds the mount namespace the attendee's commands run in; nil runs them as root.
	laptop *laptopProcess
}

// Requirements says what this machine lacks to start a lab, each with what to do (nil: nothing).
func Requirements(components, minikube string) error {
	var missing []error
	if err := dockerd.Requirements(); err != nil {
		missing = append(missing, err)
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		missing = append(missing, errors.New("nsenter on PATH (Debian package util-linux)"))
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		missing = append(missing, errors.New("setpriv on PATH (Debian package util-linux): the attendee's commands"))
	}
	for _, f := range []struct{ path, make string }{
		{filepath.Join(components, BaseImageArchive), "make node-components"},
		{filepath.Join(components, CacheDir, "linux"), "make node-components"},
		{filepath.Join(components, CacheDir, "images"), "make node-components"},
		{filepath.Join(components, ShimPath), "make node-components"},
		{minikube, "make minikube"},
	} {
		if _, err := os.Stat(f.path); err != nil {
			missing = append(missing, fmt.Errorf("%s (%s)", f.path, f.make))
		}
	}
	return errors.Join(missing...)
}

// Start starts a lab: a Docker engine with the base image loaded, and minikube's home with its
// cache. No minikube cluster runs yet: `minikube start` in the lab makes one.
func Start(ctx context.Context, opts Options) (l *Lab, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	for _, p := range []*string{&opts.Components, &opts.Minikube} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
	}
	if err := Requirements(opts.Components, opts.Minikube); err != nil {
		return nil, err
	}
	l = &Lab{Dir: opts.Dir, opts: opts}
	if l.Dir == "" {
		if l.Dir, err = os.MkdirTemp("", "kubelet-walkthrough-lab-"); err != nil {
			return nil, err
		}
		l.temp = true
	} else if err := makeRunDir(l.Dir); err != nil {
		return nil, err
	}
	if l.Dir, err = filepath.Abs(l.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = l.Stop(context.Background())
			l = nil
		}
	}()
	if err := l.prepareHome(); err != nil {
		return l, err
	}
	start := time.Now()
	// A temporary lab goes with its engine, also when this process dies first.
	engineOpts := dockerd.Options{Dir: filepath.Join(l.Dir, "docker")}
	dirMode := os.FileMode(0o700)
	var attendee laptopSpec
	var id identity
	if opts.Attendee != nil {
		if id, attendee, err = l.prepareAttendee(); err != nil {
			return l, err
		}
		// The attendee reaches the socket in the engine's directory, and uses it as the group's.
		engineOpts.SocketGroup = strconv.Itoa(id.Docker)
		dirMode = 0o711
	}
	if l.temp {
		engineOpts.RemoveOnExit = l.Dir
	}
	if opts.RemoteEngine {
		engineOpts.TCP = RemoteEngineAddress
	}
	if need, why := ShimNeeded(); need {
		engineOpts.Runtime = filepath.Join(opts.Components, ShimPath)
		fmt.Fprintf(opts.Log, "Docker runs its containers through the runc shim here: it %s.\n", why)
	}
	if err := os.MkdirAll(engineOpts.Dir, dirMode); err != nil {
		return l, err
	}
	if err := os.Chmod(engineOpts.Dir, dirMode); err != nil {
		return l, err
	}
	if l.Engine, err = dockerd.Start(ctx, engineOpts); err != nil {
		return l, err
	}
	l.netNS, _ = os.Readlink(l.Engine.NetNS())
	fmt.Fprintf(opts.Log, "Docker engine up in %s (its own namespaces, socket %s).\n", time.Since(start).Round(100*time.Millisecond), l.Engine.Socket)
	if opts.Attendee != nil {
		if l.laptop, err = startLaptop(l.Engine.Enter(), id, attendee); err != nil {
			return l, err
		}
		fmt.Fprintf(opts.Log, "Commands run as %s (uid %d, gid %d, groups %d,%d), writing as their owner %s.\n",
			AttendeeName, id.UID, id.GID, id.GID, id.Docker, strings.Join(attendee.Mounts, ", "))
	}
	start = time.Now()
	load := l.Command(ctx, "docker", "load", "--quiet", "--input", filepath.Join(opts.Components, BaseImageArchive))
	if out, err := load.CombinedOutput(); err != nil {
		return l, fmt.Errorf("docker load of the base image: %w: %s", err, out)
	}
	fmt.Fprintf(opts.Log, "Base image %s loaded in %s.\n", BaseImageRef, time.Since(start).Round(100*time.Millisecond))
	return l, nil
}

// makeRunDir makes the run directory a reader named (--dir): 0700, as a temporary one is, since
// it holds the lab's kubeconfig and minikube's home with the cluster's keys. An empty directory
// of the reader's (the only kind checkRunDir takes) is made 0700 too.
func makeRunDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// prepareHome makes the directories of the lab's environment: minikube's home (its cache is
// the components'), HOME, TMPDIR, the docker command's configuration, and PATH's first
// directory with minikube and kubectl.
func (l *Lab) prepareHome() error {
	for _, d := range []string{"minikube/.minikube", "home", "tmp", "docker-config", "bin"} {
		if err := os.MkdirAll(filepath.Join(l.Dir, d), 0o755); err != nil {
			return err
		}
	}
	cache := filepath.Join(l.opts.Components, CacheDir)
	links := map[string]string{
		filepath.Join(l.Dir, "minikube/.minikube/cache"): cache,
		filepath.Join(l.Dir, "bin/minikube"):             l.opts.Minikube,
	}
	kubectls, _ := filepath.Glob(filepath.Join(cache, "linux", "*", "*", "kubectl"))
	if len(kubectls) > 0 {
		links[filepath.Join(l.Dir, "bin/kubectl")] = kubectls[0]
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	l.env = []string{
		"PATH=" + filepath.Join(l.Dir, "bin") + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(l.Dir, "home"),
		"TMPDIR=" + filepath.Join(l.Dir, "tmp"),
		"KUBECONFIG=" + filepath.Join(l.Dir, "kubeconfig"),
		"DOCKER_CONFIG=" + filepath.Join(l.Dir, "docker-config"),
		"DOCKER_HOST=" + l.dockerHost(),
		"MINIKUBE_HOME=" + filepath.Join(l.Dir, "minikube"),
	}
	if l.opts.Attendee != nil {
		l.env = append(l.env, "USER="+AttendeeName, "LOGNAME="+AttendeeName)
	}
	// HOME is the lab's, so that minikube and kubectl write nothing into this user's; Go's caches
	// stay this user's, so that a `go build` in the lab is a link, not a download.
	if out, err := exec.Command("go", "env", "GOPATH", "GOCACHE", "GOMODCACHE").Output(); err == nil {
		if values := strings.Split(strings.TrimSpace(string(out)), "\n"); len(values) == 3 {
			l.env = append(l.env, "GOPATH="+values[0], "GOCACHE="+values[1], "GOMODCACHE="+values[2])
		}
	}
	l.env = append(l.env, OfflineSettings()...)
	return nil
}

// dockerHost is the lab's DOCKER_HOST: the engine's socket, or its TCP address (RemoteEngine).
func (l *Lab) dockerHost() string {
	if l.opts.RemoteEngine {
		return "tcp://" + RemoteEngineAddress
	}
	return "unix://" + filepath.Join(l.Dir, "docker", "docker.sock")
}

// prepareAttendee makes what the attendee needs in the run directory: its passwd and group
// files (this machine's, with the attendee's lines), and where its idmapped mounts go: the run
// directory, the directories it owns, and Go's caches.
func (l *Lab) prepareAttendee() (identity, laptopSpec, error) {
	var spec laptopSpec
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return identity{}, spec, err
	}
	group, err := os.ReadFile("/etc/group")
	if err != nil {
		return identity{}, spec, err
	}
	id := pickIdentity(string(passwd), string(group))
	home := filepath.Join(l.Dir, "home")
	etc := filepath.Join(l.Dir, "etc")
	spec = laptopSpec{UID: id.UID, GID: id.GID, Passwd: filepath.Join(etc, "passwd"), Group: filepath.Join(etc, "group")}
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return id, spec, err
	}
	if err := writeIdentityFiles(spec, passwdWith(string(passwd), id, home), groupWith(string(group), id)); err != nil {
		return id, spec, err
	}
	// The run directory is the attendee's too (minikube's home, HOME, TMPDIR, the kubeconfig),
	// and the way to it, which may be a directory of root's alone (a test's TMPDIR).
	owns := append([]string{l.Dir}, l.opts.Attendee.Owns...)
	for _, kv := range l.env {
		if k, v, _ := strings.Cut(kv, "="); (k == "GOCACHE" || k == "GOMODCACHE") && v != "" {
			owns = append(owns, v)
		}
	}
	spec.Mounts, err = mountPoints(owns, os.Stat)
	return id, spec, err
}

// OfflineSettings are the settings minikube needs here, as its environment: each is a start
// flag (MINIKUBE_<FLAG>) or a configuration key minikube reads from there. Nothing else differs
// from a reader's minikube but its CNI: the addons (storage-provisioner, default-storageclass)
// run, built from source, and nothing is forced — the `--force` every start carries is in the
// commands readers type (INSTRUCTOR.md says why).
func OfflineSettings() []string {
	return []string{
		// The base image made here, found in the engine's images without a pull: kicbase
		// v0.0.50 is a download.
		"MINIKUBE_BASE_IMAGE=" + BaseImageRef,
		// No preloaded tarball to download: the images come from the cache, one by one.
		"MINIKUBE_PRELOAD=false",
		// minikube's default CNI for the docker driver with containerd is kindnet, whose image
		// cannot be built here: kind's images/kindnetd is a module the Go module proxy does not
		// serve, and this repository builds only from what the proxy serves, never from a copy.
		// bridge is minikube's own (and what its VM drivers run).
		"MINIKUBE_CNI=bridge",
		// No notice about a newer minikube (it could not be fetched anyway).
		"MINIKUBE_WANTUPDATENOTIFICATION=false",
	}
}

// Env is the environment of a command run in the lab: this process's, with the lab's settings
// over it.
func (l *Lab) Env() []string {
	env := os.Environ()
	for _, kv := range l.env {
		key, _, _ := strings.Cut(kv, "=")
		env = append(withoutKey(env, key), kv)
	}
	return env
}

// Settings are the lab's own variables (what Env adds), one NAME=value each.
func (l *Lab) Settings() []string { return append([]string(nil), l.env...) }

func withoutKey(env []string, key string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Command runs a program in the lab: on the engine's network, where minikube's node and its
// published ports are, with the lab's environment. It runs in the engine's PID namespace too,
// so that it ends with the lab, also when the process that started both dies first.
func (l *Lab) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return l.CommandIn(ctx, l.Dir, name, args...)
}

// CommandIn is Command in the working directory dir ("": this process's).
func (l *Lab) CommandIn(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	argv := l.Engine.Enter()
	if l.laptop != nil {
		argv = append(argv, l.laptop.enter(dir)...)
	} else {
		argv = append(argv, "--")
	}
	cmd := exec.CommandContext(ctx, "nsenter", append(argv, append([]string{name}, args...)...)...)
	cmd.Env = l.Env()
	cmd.Dir = dir
	return cmd
}

// Stop deletes what minikube made (`minikube delete --all`, as a reader ends), stops the engine,
// and removes the run directory when the lab made it.
func (l *Lab) Stop(ctx context.Context) error {
	var errs []error
	if l.Engine != nil {
		if profiles, _ := filepath.Glob(filepath.Join(l.Dir, "minikube/.minikube/profiles/*")); len(profiles) > 0 {
			deleteCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			out, err := l.Command(deleteCtx, "minikube", "delete", "--all").CombinedOutput()
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("minikube delete --all: %w: %s", err, out))
			}
		}
		if l.laptop != nil {
			l.laptop.stop()
		}
		if err := l.Engine.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if l.temp {
		if err := os.RemoveAll(l.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
