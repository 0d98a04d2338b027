package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDocker stands for docker: it writes each command line it gets to $DOCKER_LOG (an argument a
// line, then "--"), with MSYS_NO_PATHCONV, and answers as $FAKE_DOCKER says: "down" (its engine
// does not answer), "noimage" (the image is not built yet), "rootless" (a rootless engine), else as
// an engine with the image.
const fakeDocker = `#!/bin/sh
{ echo "MSYS_NO_PATHCONV=${MSYS_NO_PATHCONV:-}"; for a in "$@"; do echo "$a"; done; echo --; } >>"$DOCKER_LOG"
case $1 in
info)
  case ${FAKE_DOCKER:-} in
  down) exit 1 ;;
  rootless) echo '["name=seccomp,profile=builtin","name=rootless","name=cgroupns"]' ;;
  *) echo '["name=seccomp,profile=builtin","name=cgroupns"]' ;;
  esac ;;
image) [ "$2" != inspect ] || [ "${FAKE_DOCKER:-}" != noimage ] ;;
run) echo "the container ran" ;;
esac
`

// machine is a machine as make sees it: uname prints what uname says, id says uid:gid, and PATH
// has the tools the Makefile and its scripts use, but neither go nor docker unless docker is
// fakeDocker (and cygpath, Git for Windows' own, when the machine is Windows).
type machine struct {
	uname, id string
	docker    bool
}

// env is the environment make runs with on m, its fake docker's log, and the checkout's path.
func (m machine) env(t *testing.T) (env []string, log string) {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"make", "bash", "sed", "awk", "cksum", "dirname", "mkdir", "cat", "tail", "wc", "grep", "sort"} {
		path, err := exec.LookPath(tool)
		require.NoError(t, err, "%s, which the Makefile and .ci/in-docker use", tool)
		require.NoError(t, os.Symlink(path, filepath.Join(bin, tool)))
	}
	uid, gid, _ := strings.Cut(m.id, ":")
	fakes := map[string]string{
		"uname":   "#!/bin/sh\necho " + m.uname + "\n",
		"id":      "#!/bin/sh\ncase $1 in -u) echo " + uid + ";; -g) echo " + gid + ";; esac\n",
		"cygpath": "#!/bin/sh\necho C:/checkout\n",
	}
	if m.docker {
		fakes["docker"] = fakeDocker
	}
	for name, script := range fakes {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
	}
	log = filepath.Join(t.TempDir(), "docker.log")
	return []string{"PATH=" + bin, "DOCKER_LOG=" + log, "HOME=" + t.TempDir()}, log
}

// dockerRuns are the command lines the fake docker got, one per call.
func dockerRuns(t *testing.T, log string) [][]string {
	t.Helper()
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var calls [][]string
	var call []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "--" {
			calls = append(calls, call)
			call = nil
			continue
		}
		call = append(call, line)
	}
	return calls
}

// makeOn runs make with args on m, in the checkout, with more environment.
func makeOn(t *testing.T, m machine, more []string, args ...string) (out string, calls [][]string, err error) {
	t.Helper()
	env, log := m.env(t)
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(env, more...)
	data, err := cmd.CombinedOutput()
	return string(data), dockerRuns(t, log), err
}

// ownLines are the lines of out that make did not add: make's own are "make: *** …".
func ownLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "make: ") && l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestMakeRunSaysWhatToInstall: where the chapter runs in Docker and there is none, or its engine
// does not answer, make run says so in one line and what to install or start — with no Go on the
// machine (nothing make reads needs it), no compiler error, and no kubelet started off Linux.
func TestMakeRunSaysWhatToInstall(t *testing.T) {
	tests := []struct {
		name   string
		m      machine
		more   []string
		target string
		says   string
	}{
		{"a Mac without Docker", machine{uname: "Darwin", id: "501:20"}, nil, "run",
			"make runs chapter 04-runkubelet in a Linux container here (Darwin): install Docker (Docker Desktop, OrbStack, colima or Rancher Desktop); no docker on PATH"},
		{"a Mac whose Docker is not running", machine{uname: "Darwin", id: "501:20", docker: true}, []string{"FAKE_DOCKER=down"}, "run-08-minicluster",
			"make runs chapter 08-minicluster in a Linux container here (Darwin): Docker is installed but its engine does not answer — start Docker Desktop (or colima start, …)"},
		{"Windows without Docker", machine{uname: "MINGW64_NT-10.0-22631", id: "197609:197121"}, nil, "run-13-debugger",
			"make runs chapter 13-debugger in a Linux container here (MINGW64_NT-10.0-22631): install Docker (Docker Desktop, OrbStack, colima or Rancher Desktop); no docker on PATH"},
		{"Linux, in Docker by choice", machine{uname: "Linux", id: "1000:1000"}, []string{"RUN_IN=docker"}, "run",
			"make runs chapter 04-runkubelet in a Linux container here (Linux): install Docker (Docker Desktop, OrbStack, colima or Rancher Desktop); no docker on PATH"},
		{"a Mac without Go, a chapter that runs there", machine{uname: "Darwin", id: "501:20", docker: true}, nil, "run-01-entrypoint",
			"no go on PATH: install Go 1.26 or newer (https://go.dev/dl/), or add RUN_IN=docker to make's command line to run the chapter in Docker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, calls, err := makeOn(t, tt.m, tt.more, tt.target)
			require.Error(t, err, "%s", out)
			assert.Equal(t, []string{tt.says}, ownLines(out), "one line, saying what to do")
			for _, c := range calls {
				assert.NotEqual(t, "run", c[1], "no container started: %v", c)
			}
		})
	}

	out, _, err := makeOn(t, machine{uname: "Darwin", id: "501:20"}, nil, "help")
	require.NoError(t, err, "%s", out)
	assert.Contains(t, out, "kubelet-walkthrough on k8s.io/kubernetes v1.37.2", "make reads go.mod's version without Go")
}

// runIn is the arguments of the fake docker's `docker run`, and the command it runs in the
// container (from the image on).
func runIn(t *testing.T, calls [][]string) (options, command []string) {
	t.Helper()
	for _, c := range calls {
		if c[1] == "run" {
			i := slices.Index(c, ".ci/in-docker")
			require.Greater(t, i, 0, "docker run's command: %v", c)
			return c[1 : i-1], c[i-1:]
		}
	}
	t.Fatalf("no docker run in %v", calls)
	return nil, nil
}

// TestMakeRunInDockerGivesWhatEachChapterNeeds: the container .ci/in-docker starts runs as the
// reader, with the checkout at its own path and Go's caches in named volumes, and gets what its
// chapter needs and no more: ports published on 127.0.0.1 only (the URL the chapter prints is the
// port's), the one capability a private network namespace needs (and CAP_NET_ADMIN for root's),
// nothing for Delve; never the host's network or --privileged.
func TestMakeRunInDockerGivesWhatEachChapterNeeds(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	root, err = filepath.EvalSymlinks(root)
	require.NoError(t, err)
	mac := machine{uname: "Darwin", id: "501:20", docker: true}
	kubeconfig := "--kubeconfig=" + root + "/.bin/docker/08-minicluster.kubeconfig"
	tests := []struct {
		name    string
		m       machine
		target  string
		more    []string
		publish []string // host ports
		caps    []string
		args    []string // the chapter's, after the relayed ports
	}{
		{"make run", mac, "run", nil, []string{"10255"}, nil, []string{"--read-only-port=10255"}},
		{"04's routes serve nothing", mac, "run-04-runkubelet", []string{"ARGS=routes -o text"}, nil, nil, []string{"routes", "-o", "text"}},
		{"a port of the reader's", mac, "run", []string{"ARGS=--once --read-only-port 10300"}, []string{"10300"}, nil, []string{"--once", "--read-only-port", "10300"}},
		{"05's two kubelets", mac, "run-05-bootstrap", nil, []string{"10256", "10255"}, nil, []string{"--read-only-port=10255", "--toy-read-only-port=10256"}},
		{"08 as a user", mac, "run-08-minicluster", nil, []string{"6443"}, []string{"SYS_ADMIN"}, []string{"--apiserver-port=6443", kubeconfig}},
		{"08 as root", machine{uname: "Darwin", id: "0:0", docker: true}, "run-08-minicluster", nil, []string{"6443"}, []string{"NET_ADMIN", "SYS_ADMIN"}, []string{"--apiserver-port=6443", kubeconfig}},
		{"09's probes", mac, "run-09-probes", nil, nil, nil, nil},
		{"09's node", mac, "run-09-probes", []string{"ARGS=node"}, nil, []string{"SYS_ADMIN"}, []string{"node"}},
		{"12 in Delve", mac, "run-13-debugger", nil, nil, nil, nil},
		{"12 as debug-chain", mac, "debug-chain", nil, nil, nil, nil},
		{"Linux, by choice", machine{uname: "Linux", id: "1000:1000", docker: true}, "run-03-run", []string{"RUN_IN=docker"}, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, calls, err := makeOn(t, tt.m, tt.more, tt.target)
			require.NoError(t, err, "%s", out)
			assert.Equal(t, "the container ran", strings.TrimSpace(out))
			options, command := runIn(t, calls)
			uid := tt.m.id
			assert.Subset(t, options, []string{"--init", "--interactive", "--user", uid, "--volume", root + ":" + root, "--workdir", root,
				"kubelet-walkthrough-go-mod:/go/pkg/mod", "kubelet-walkthrough-go-build:/go/cache", "HOME=/tmp"})
			var published, caps []string
			for i, o := range options {
				switch o {
				case "--publish":
					host, port, _ := strings.Cut(strings.TrimPrefix(options[i+1], "127.0.0.1:"), ":")
					assert.Equal(t, host, port, "published on this machine's 127.0.0.1, at the chapter's own port: %s", options[i+1])
					published = append(published, host)
				case "--cap-add":
					caps = append(caps, options[i+1])
				}
				assert.NotContains(t, []string{"--privileged", "--network", "--net", "--pid", "--ipc", "--cap-add=ALL"}, o)
			}
			// Removed once docker run has returned, however it ended (not --rm: a killed docker would leave it running).
			name := options[slices.Index(options, "--name")+1]
			assert.Equal(t, []string{"container", "rm", "--force", "--volumes", name}, calls[len(calls)-1][1:], "the container removed at the end")
			assert.Equal(t, tt.publish, published, "published ports")
			slices.Sort(caps)
			assert.Equal(t, tt.caps, caps, "capabilities")
			if len(caps) > 0 {
				assert.Contains(t, options, "no-new-privileges", "no set-user-ID way to the capability")
			}
			chapter := strings.TrimPrefix(tt.target, "run-")
			switch tt.target {
			case "run":
				chapter = "04-runkubelet"
			case "debug-chain":
				chapter = "13-debugger"
			}
			ports := ""
			for i := len(tt.publish) - 1; i >= 0; i-- {
				ports += " " + tt.publish[i]
			}
			assert.Equal(t, append([]string{".ci/in-docker", "inside", "run", chapter, ports}, tt.args...), command[1:])
			assert.Regexp(t, regexp.MustCompile(`^kubelet-walkthrough-dev:\d+$`), command[0], "the image of today's Dockerfile")
		})
	}

	t.Run("the image is built once", func(t *testing.T) {
		out, calls, err := makeOn(t, mac, []string{"FAKE_DOCKER=noimage"}, "run")
		require.NoError(t, err, "%s", out)
		image, err := exec.Command("../.ci/in-docker", "image").Output()
		require.NoError(t, err)
		assert.Contains(t, calls, []string{"MSYS_NO_PATHCONV=", "build", "--tag", strings.TrimSpace(string(image)), root + "/.devcontainer"})
		assert.Contains(t, out, "Building the image ")
	})
	t.Run("rootless Docker", func(t *testing.T) {
		out, calls, err := makeOn(t, mac, []string{"FAKE_DOCKER=rootless"}, "run-08-minicluster")
		require.NoError(t, err, "%s", out)
		options, _ := runIn(t, calls)
		assert.Subset(t, options, []string{"--user", "0:0", "NET_ADMIN"}, "the container's root, which is the reader here")
	})
	t.Run("Windows", func(t *testing.T) {
		out, calls, err := makeOn(t, machine{uname: "MINGW64_NT-10.0-22631", id: "197609:197121", docker: true}, nil, "run")
		require.NoError(t, err, "%s", out)
		options, _ := runIn(t, calls)
		assert.Subset(t, options, []string{"C:/checkout:" + root, "--workdir", root}, "Windows' path on its side, the checkout's own in the container")
		for _, c := range calls {
			assert.Equal(t, "MSYS_NO_PATHCONV=1", c[0], "MSYS rewrites no argument: %v", c)
		}
	})
	t.Run("caches of the reader's", func(t *testing.T) {
		mod, build := t.TempDir(), t.TempDir()
		out, calls, err := makeOn(t, mac, []string{"GOMODCACHE_VOLUME=" + mod, "GOCACHE_VOLUME=" + build}, "run")
		require.NoError(t, err, "%s", out)
		options, _ := runIn(t, calls)
		assert.Subset(t, options, []string{mod + ":" + mod, "GOMODCACHE=" + mod, build + ":" + build, "GOCACHE=" + build}, "at their own paths")
	})
	t.Run("clean-docker", func(t *testing.T) {
		out, calls, err := makeOn(t, mac, nil, "clean-docker")
		require.NoError(t, err, "%s", out)
		assert.Contains(t, calls, []string{"MSYS_NO_PATHCONV=", "volume", "rm", "--force", "kubelet-walkthrough-go-mod", "kubelet-walkthrough-go-build"})
		assert.Contains(t, out, "Removed the volumes")
	})
	t.Run("a port Docker cannot publish", func(t *testing.T) {
		out, calls, err := makeOn(t, mac, []string{"ARGS=--read-only-port=0"}, "run")
		require.Error(t, err)
		assert.Equal(t, []string{"error: --read-only-port 0: in Docker the chapter serves on a port named in advance, so that Docker can publish it (1 to 65535)"}, ownLines(out))
		for _, c := range calls {
			assert.NotEqual(t, "run", c[1], "no container started: %v", c)
		}
	})
}
