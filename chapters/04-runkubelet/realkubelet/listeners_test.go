package realkubelet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/reviewserver"
)

// ownTmpdir gives the test a TMPDIR of its own, short enough for the kubelet's sockets, that
// TestMain removes; the test checks it is empty at its end.
func ownTmpdir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rk")
	require.NoError(t, err)
	tmpdirs = append(tmpdirs, dir)
	t.Setenv("TMPDIR", dir)
	return dir
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "what was left in %s", dir)
}

// busyPort returns a loopback port something listens on until the test ends.
func busyPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// The secure port serves /logs/ and /debug/: it runs only with Webhook, anonymous refused,
// whatever Options or Configure say. These fail before any server starts, leaving nothing.
func TestSecurePortOnlyAuthenticated(t *testing.T) {
	busy := busyPort(t)
	free, err := choosePort("127.0.0.1", "test port", 0)
	require.NoError(t, err)
	tests := []struct {
		name      string
		opts      Options
		configure func(*kubeletconfig.KubeletConfiguration)
		wantErr   string
	}{
		{name: "a secure port without Webhook", opts: Options{SecurePort: busy},
			wantErr: "secure port " + strconv.Itoa(busy) + ": the kubelet's HTTPS server serves /logs/ and /debug/ to whoever it lets in, so it runs only with Webhook"},
		{name: "Configure allows anonymous requests", opts: Options{Webhook: true},
			configure: func(c *kubeletconfig.KubeletConfiguration) { c.Authentication.Anonymous.Enabled = true },
			wantErr:   "anonymous requests would reach /logs/ and /debug/"},
		{name: "Configure authorizes every caller", opts: Options{Webhook: true},
			configure: func(c *kubeletconfig.KubeletConfiguration) {
				c.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeAlwaysAllow
			},
			wantErr: "authorization AlwaysAllow would let every authenticated caller reach /logs/ and /debug/"},
		{name: "Configure turns the server on without Webhook",
			configure: func(c *kubeletconfig.KubeletConfiguration) { c.EnableServer, c.Port = true, int32(free) },
			wantErr:   "authorization AlwaysAllow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := ownTmpdir(t)
			opts := tt.opts
			if tt.configure != nil {
				opts.Configure = func(_ *options.KubeletFlags, c *kubeletconfig.KubeletConfiguration) { tt.configure(c) }
			}
			_, err := Start(context.Background(), opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assertEmpty(t, tmp)
		})
	}
}

// A port asked for that is in use is an error naming the port and the address, before the
// kubelet starts: the kubelet would end the process on it.
func TestPortInUse(t *testing.T) {
	busy := busyPort(t)
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"read-only port", Options{ReadOnlyPort: busy},
			"the kubelet's read-only port: listen tcp 127.0.0.1:" + strconv.Itoa(busy) + ": bind: address already in use"},
		{"secure port", Options{ReadOnlyPort: -1, Webhook: true, SecurePort: busy},
			"the kubelet's secure port: listen tcp 127.0.0.1:" + strconv.Itoa(busy) + ": bind: address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := ownTmpdir(t)
			_, err := Start(context.Background(), tt.opts)
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, err.Error())
			assertEmpty(t, tmp)
		})
	}
}

// choosePort tries a port asked for, and never gives one port to two kubelets of a process.
func TestChoosePort(t *testing.T) {
	busy := busyPort(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	free := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	tests := []struct {
		name    string
		want    int
		wantErr string // empty: want is returned (0 when want < 0; some port when want is 0)
	}{
		{name: "disabled", want: -1},
		{name: "any free port", want: 0},
		{name: "a free port asked for", want: free},
		{name: "the same port again", want: free,
			wantErr: "the kubelet's test port " + strconv.Itoa(free) + " on 127.0.0.1: given to another kubelet of this process already"},
		{name: "a port in use", want: busy,
			wantErr: "the kubelet's test port: listen tcp 127.0.0.1:" + strconv.Itoa(busy) + ": bind: address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := choosePort("127.0.0.1", "test port", tt.want)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			switch {
			case tt.want < 0:
				assert.Zero(t, got)
			case tt.want == 0:
				assert.Positive(t, got)
			default:
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

// When the kubelet ends the process anyway — here a read-only port taken between Start's check
// and the kubelet's listen — the program says why in the kubelet's words on the terminal and
// leaves nothing behind: no root directory, no temporary log, nothing registered with AtExit.
// The kubelet's other goroutines go on until the process ends: its pod-resources and pods-API
// listeners start beside the read-only one and make their directories in the root directory
// (cri-client's CreateListener, os.MkdirAll), Run makes its own (setupDataDirs). The second case
// has a goroutine do that without pause, so that each moment before the process ends is covered.
func TestKubeletExitSaysWhyAndLeavesNothing(t *testing.T) {
	if port := os.Getenv("REALKUBELET_EXIT_PORT"); port != "" {
		exitChild(port, os.Getenv("REALKUBELET_EXIT_REMAKE") != "")
		return
	}
	for _, tt := range []struct {
		name   string
		remake bool
	}{
		{name: "the kubelet alone"},
		{name: "a goroutine making the kubelet's directories until the end", remake: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := ownTmpdir(t)
			port := busyPort(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestKubeletExitSaysWhyAndLeavesNothing$", "-test.count=1")
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "REALKUBELET_EXIT_PORT="+strconv.Itoa(port))
			if tt.remake {
				cmd.Env = append(cmd.Env, "REALKUBELET_EXIT_REMAKE=1")
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%v\nstdout: %s\nstderr: %s", err, &stdout, &stderr)
			assert.Equal(t, 1, exit.ExitCode(), "stderr: %s", &stderr)
			assert.Equal(t, "error: the kubelet ended this program: Failed to listen and serve: listen tcp 127.0.0.1:"+strconv.Itoa(port)+": bind: address already in use\n", stderr.String())
			assertEmpty(t, tmp)
		})
	}
}

// exitChild starts a kubelet whose read-only port (set by Configure, after Start's check) is
// port, with logging set up as a chapter's, klog in a temporary log and a file registered with
// AtExit, and waits for the kubelet to end the process. With remake, a goroutine makes the
// kubelet's pod-resources directory again and again from before the kubelet starts.
func exitChild(port string, remake bool) {
	logs.InitLogs() // as a chapter's program.Run does: contextual logging off
	_, closeLog, err := kubeletlog.ToFile("")
	if err != nil {
		panic(err)
	}
	defer closeLog()
	f, err := os.CreateTemp("", "registered-")
	if err != nil {
		panic(err)
	}
	_ = f.Close()
	kubeletlog.AtExit(func() { _ = os.Remove(f.Name()) })
	n, _ := strconv.Atoi(port)
	_, err = Start(context.Background(), Options{Configure: func(flags *options.KubeletFlags, c *kubeletconfig.KubeletConfiguration) {
		c.ReadOnlyPort = int32(n)
		if remake {
			go func() {
				for {
					_ = os.MkdirAll(filepath.Join(flags.RootDirectory, "pod-resources"), 0o750)
				}
			}()
		}
	}})
	time.Sleep(time.Minute) // the kubelet's os.Exit(1) comes first
	panic("the kubelet did not end the process; Start said: " + errString(err))
}

func errString(err error) string {
	if err == nil {
		return "nothing"
	}
	return err.Error()
}

// Every error the kubelet logs right before os.Exit(1), in the files that run in these
// kubelets, is one lastWords recognises: read from the pinned source.
func TestExitMessages(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	require.NoError(t, err)
	root := strings.TrimSpace(string(out))
	logged := regexp.MustCompile(`logger\.Error\([^,]+, "([^"]+)"`)
	var found []string
	for _, file := range []string{"pkg/kubelet/server/server.go", "pkg/kubelet/kubelet.go"} {
		f, err := os.Open(filepath.Join(root, file))
		require.NoError(t, err)
		scanner := bufio.NewScanner(f)
		scanner.Buffer(nil, 1<<20)
		previous := ""
		for scanner.Scan() {
			line := strings.TrimSpace(scanner.Text())
			if line == "os.Exit(1)" {
				m := logged.FindStringSubmatch(previous)
				require.NotNil(t, m, "%s: os.Exit(1) after %q", file, previous)
				found = append(found, m[1])
				assert.True(t, exitMessages[m[1]], "%s: %q is not in exitMessages", file, m[1])
			}
			previous = line
		}
		require.NoError(t, scanner.Err())
		_ = f.Close()
	}
	assert.Len(t, found, 11)

	// And the other way: wherever the kubelet logs one of these, os.Exit(1) follows — a message
	// logged on a path that goes on would have the program remove the kubelets' directories.
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "pkg", "kubelet"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(data), "\n")
		for i, line := range lines {
			for msg := range exitMessages {
				if strings.Contains(line, `"`+msg+`"`) {
					require.Less(t, i+1, len(lines))
					assert.Equal(t, "os.Exit(1)", strings.TrimSpace(lines[i+1]), "%s:%d logs %q and goes on", path, i+1, msg)
				}
			}
		}
		return nil
	}))
}

// The logger the kubelet gets logs as the one it wraps, with the kubelet's file and line, and
// calls onExit only for the errors that precede os.Exit(1).
func TestWatchExit(t *testing.T) {
	var said []string
	lines := kubeletlog.Capture(func() {
		logger := watchExit(klog.Background(), func(msg string, err error) { said = append(said, msg+": "+err.Error()) })
		logger = logger.WithName("kubelet").WithValues("node", "n1")
		logger.Info("Starting to listen")
		logger.Error(errors.New("bind: address already in use"), "Failed to listen and serve")
		logger.Error(errors.New("transient"), "Failed to sync pod")
	})
	require.Len(t, lines, 3)
	assert.Regexp(t, `^I listeners_test.go:\d+\] "Starting to listen" logger="kubelet" node="n1"$`, lines[0])
	assert.Regexp(t, `^E listeners_test.go:\d+\] "Failed to listen and serve" err="bind: address already in use" logger="kubelet" node="n1"$`, lines[1])
	assert.Equal(t, []string{"Failed to listen and serve: bind: address already in use"}, said)
}

// What a kubelet started with the zero Options listens on: its read-only port on 127.0.0.1, and
// unix sockets (the fake runtime's, podresources) inside its root directory, which only this
// user may enter (0700) — nothing on all interfaces, no secure port.
func TestListensOnlyWhereAsked(t *testing.T) {
	tcpBefore, unixBefore := listening(t)
	k := start(t, Options{StaticPodPath: t.TempDir()})
	tcpAfter, unixAfter := listening(t)

	var opened []string
	for addr := range tcpAfter {
		if !tcpBefore[addr] {
			opened = append(opened, addr)
		}
	}
	assert.Equal(t, []string{strings.TrimPrefix(k.ReadOnlyURL, "http://")}, opened)
	var sockets int
	for path := range unixAfter {
		if !unixBefore[path] {
			sockets++
			assert.True(t, strings.HasPrefix(path, k.RootDir+"/"), "%s is outside the root directory %s", path, k.RootDir)
		}
	}
	assert.Positive(t, sockets)
	info, err := os.Stat(k.RootDir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the root directory, where its sockets and serving key are")
	assert.Empty(t, k.ServingCertFile)
	assert.NoDirExists(t, filepath.Join(k.RootDir, "pki"), "no secure port, no serving key")
}

// The self-signed serving key app.InitializeTLS writes for a secure port is this user's only.
func TestServingKeyPrivate(t *testing.T) {
	reviews := reviewserver.Start(nil, nil)
	t.Cleanup(reviews.Close)
	client, err := reviews.Client()
	require.NoError(t, err)
	k := start(t, Options{StaticPodPath: t.TempDir(), ReadOnlyPort: -1, Webhook: true, AuthClient: client})
	key := strings.TrimSuffix(k.ServingCertFile, ".crt") + ".key"
	require.True(t, strings.HasPrefix(key, k.RootDir+"/"), key)
	for path, want := range map[string]os.FileMode{k.RootDir: 0o700, key: 0o600} {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, info.Mode().Perm(), path)
	}
}

// listening returns the TCP addresses (ip:port) and unix socket paths this process listens on.
func listening(t *testing.T) (tcp, unix map[string]bool) {
	t.Helper()
	mine := map[string]bool{} // socket inodes of this process
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	tcp, unix = map[string]bool{}, map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !mine[f[9]] { // 0A: LISTEN
				continue
			}
			tcp[procAddr(t, f[1])] = true
		}
	}
	data, err := os.ReadFile("/proc/net/unix")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 8 && f[5] == "01" && mine[f[6]] { // 01: listening
			unix[f[7]] = true
		}
	}
	return tcp, unix
}

// procAddr turns /proc/net/tcp's "0100007F:A6AB" into "127.0.0.1:42667" (IPv4 only; an IPv6
// address is returned as /proc writes it, which no expectation here matches).
func procAddr(t *testing.T, s string) string {
	t.Helper()
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	require.NoError(t, err)
	if len(hexIP) != 8 {
		return s
	}
	n, err := strconv.ParseUint(hexIP, 16, 32)
	require.NoError(t, err)
	ip := net.IPv4(byte(n), byte(n>>8), byte(n>>16), byte(n>>24)) // little-endian
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
}

// The read-only port takes no credentials by design, and so serves none of what the secure
// port guards: its server is made without a configuration (ListenAndServeKubeletReadOnlyServer
// passes nil), so the kubelet installs its "debugging disabled" handlers instead.
func TestReadOnlyPortServesNoLogsNorDebug(t *testing.T) {
	k := start(t, Options{StaticPodPath: t.TempDir()})
	tests := []struct {
		method, path string
		wantStatus   int
	}{
		{http.MethodGet, "/logs/", http.StatusMethodNotAllowed},
		{http.MethodGet, "/logs/syslog", http.StatusMethodNotAllowed},
		{http.MethodGet, "/debug/pprof/", http.StatusMethodNotAllowed},
		{http.MethodGet, "/debug/pprof/goroutine", http.StatusMethodNotAllowed},
		{http.MethodPut, "/debug/flags/v", http.StatusNotFound},
		{http.MethodGet, "/configz", http.StatusNotFound},
		{http.MethodGet, "/healthz", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, k.ReadOnlyURL+tt.path, strings.NewReader("10"))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, tt.wantStatus, resp.StatusCode)
		})
	}
}

// Ctrl-C while the kubelet starts is said as such, not as whatever wait it cut short, and
// leaves nothing.
func TestStartInterrupted(t *testing.T) {
	manifests := t.TempDir()
	tmp := ownTmpdir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Start(ctx, Options{StaticPodPath: manifests, Dependencies: func(*kubelet.Dependencies) { cancel() }})
	require.Error(t, err)
	assert.Equal(t, "interrupted before the kubelet was serving", err.Error())
	assert.ErrorIs(t, err, ErrInterrupted)
	assert.ErrorIs(t, err, context.Canceled)
	assertEmpty(t, tmp)
}
