package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"
	"github.com/google/go-dap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/tier"
)

// root is the repository's root.
var root = repo.Root()

// launchConfig is a configuration of .vscode/launch.json, as VS Code's Go extension sends it to
// Delve's DAP server (the fields the repository uses).
type launchConfig struct {
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	Request    string   `json:"request"`
	Mode       string   `json:"mode"`
	Program    string   `json:"program,omitempty"`
	Cwd        string   `json:"cwd,omitempty"`
	BuildFlags string   `json:"buildFlags,omitempty"`
	Args       []string `json:"args,omitempty"`
	Host       string   `json:"host,omitempty"`
	Port       int      `json:"port,omitempty"`
}

func readLaunch(t *testing.T) []launchConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".vscode", "launch.json"))
	require.NoError(t, err)
	var launch struct {
		Configurations []launchConfig `json:"configurations"`
	}
	require.NoError(t, json.Unmarshal(data, &launch), ".vscode/launch.json is JSON")
	return launch.Configurations
}

// makeVariable is a variable's value as make sees it, on a machine whose `uname -s` prints uname
// ("" for this one's): the Makefile's own expression, evaluated by make.
func makeVariable(t *testing.T, name, uname string) string {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "-s", "-C", root, "--eval=print-variable: ; @:$(info $("+name+"))", "print-variable")
	cmd.Env = repo.MakeEnv()
	if uname != "" {
		bin := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(bin, "uname"), []byte("#!/bin/sh\necho "+uname+"\n"), 0o755))
		cmd.Env = append(repo.MakeEnv(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	out, err := cmd.Output()
	require.NoError(t, err, "make prints %s", name)
	return strings.TrimSpace(string(out))
}

// DEBUG_ADDR: a local port where Delve refuses other users (Linux: --only-same-user, its default),
// a unix socket in the repository's .bin/debug elsewhere, where Delve cannot tell who connects.
func TestDebugAddressOnlyYouCanUse(t *testing.T) {
	for _, tt := range []struct{ uname, want string }{
		{"Linux", "127.0.0.1:2345"},
		{"Darwin", "unix:" + filepath.Join(absRoot(t), ".bin", "debug", "dlv.sock")},
		{"MINGW64_NT-10.0-22631", "unix:" + filepath.Join(absRoot(t), ".bin", "debug", "dlv.sock")},
	} {
		assert.Equal(t, tt.want, makeVariable(t, "DEBUG_ADDR", tt.uname), tt.uname)
	}
	// A socket in a directory others can open is refused, before anything is built or changed.
	shared := t.TempDir()
	require.NoError(t, os.Chmod(shared, 0o755))
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "-o", "dlv", "debug-01-entrypoint", "DEBUG_ADDR=unix:"+filepath.Join(shared, "dlv.sock"))
	cmd.Env = repo.MakeEnv()
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "error: "+shared+"/: other users can open it")
	info, err := os.Stat(shared)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm(), "the reader's directory is left as it was")
}

func absRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(root)
	require.NoError(t, err)
	return abs
}

func chapters(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, "chapters", "[0-9][0-9]-*"))
	require.NoError(t, err)
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(d))
	}
	require.NotEmpty(t, names)
	return names
}

// Every chapter has a configuration in .vscode/launch.json and in .run/ (GoLand), built with the
// Makefile's DEBUG_BUILD_FLAGS, and both editors attach to the Makefile's DEBUG_ADDR.
func TestEditorConfigurationsNameEveryChapter(t *testing.T) {
	buildFlags := makeVariable(t, "DEBUG_BUILD_FLAGS", "")
	host, port, err := net.SplitHostPort(makeVariable(t, "DEBUG_ADDR", "Linux"))
	require.NoError(t, err)

	launched := map[string]bool{}
	attach := 0
	for _, c := range readLaunch(t) {
		assert.Equal(t, "go", c.Type, c.Name)
		switch c.Request {
		case "launch":
			launched[c.Name] = true
			assert.Equal(t, "debug", c.Mode, c.Name)
			assert.Equal(t, "${workspaceFolder}/chapters/"+c.Name, c.Program, c.Name)
			assert.Equal(t, "${workspaceFolder}", c.Cwd, "%s runs from the repository's root, as the READMEs do", c.Name)
			assert.Equal(t, buildFlags, c.BuildFlags, "%s is built as make debug builds it", c.Name)
		case "attach":
			attach++
			assert.Equal(t, "remote", c.Mode, c.Name)
			assert.Equal(t, host, c.Host, c.Name)
			assert.Equal(t, port, strconv.Itoa(c.Port), c.Name)
		default:
			t.Errorf("%s: request %q", c.Name, c.Request)
		}
	}
	assert.Equal(t, 1, attach, "one configuration attaches to make debug")

	goland := map[string]bool{}
	runs, err := filepath.Glob(filepath.Join(root, ".run", "*.run.xml"))
	require.NoError(t, err)
	for _, file := range runs {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var component struct {
			Configuration struct {
				Name    string `xml:"name,attr"`
				Type    string `xml:"type,attr"`
				Host    string `xml:"host,attr"`
				Port    string `xml:"port,attr"`
				Package struct {
					Value string `xml:"value,attr"`
				} `xml:"package"`
				WorkingDirectory struct {
					Value string `xml:"value,attr"`
				} `xml:"working_directory"`
				GoParameters struct {
					Value string `xml:"value,attr"`
				} `xml:"go_parameters"`
			} `xml:"configuration"`
		}
		require.NoError(t, xml.Unmarshal(data, &component), file)
		c := component.Configuration
		switch c.Type {
		case "GoApplicationRunConfiguration":
			goland[c.Name] = true
			assert.Equal(t, "github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/"+c.Name, c.Package.Value, file)
			assert.Equal(t, "$PROJECT_DIR$", c.WorkingDirectory.Value, file)
			assert.Equal(t, strings.ReplaceAll(buildFlags, "'", `"`), c.GoParameters.Value, file)
		case "GoRemoteDebugConfigurationType":
			assert.Equal(t, host, c.Host, file)
			assert.Equal(t, port, c.Port, file)
		default:
			t.Errorf("%s: type %q", file, c.Type)
		}
	}
	for _, chapter := range chapters(t) {
		assert.True(t, launched[chapter], ".vscode/launch.json has no configuration for %s", chapter)
		assert.True(t, goland[chapter], ".run/ has no GoLand configuration for %s", chapter)
	}
	assert.Len(t, launched, len(chapters(t)), "a configuration per chapter, no more")
	assert.Len(t, goland, len(chapters(t)), "a GoLand configuration per chapter, no more")
}

var dlvOnce struct {
	sync.Once
	path string
	err  error
}

// dlv builds .bin/dlv as the reader does, with make dlv.
func dlv(t *testing.T) string {
	t.Helper()
	dlvOnce.Do(func() {
		cmd := exec.Command("make", "--no-print-directory", "-C", root, "dlv")
		cmd.Env = repo.MakeEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			dlvOnce.err = fmt.Errorf("make dlv: %w\n%s", err, out)
			return
		}
		dlvOnce.path, dlvOnce.err = filepath.Abs(filepath.Join(root, ".bin", "dlv"))
	})
	require.NoError(t, dlvOnce.err)
	return dlvOnce.path
}

// freePort is a port on 127.0.0.1 nothing listens on, found by binding it and letting it go.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// make debug-01-entrypoint serves the chapter in a headless Delve, on a local port (Linux's
// default) and on a unix socket in a directory it makes for you alone (elsewhere's); Delve's own
// client attaches (as an editor's "Attach to make debug" does), stops in the chapter's main and
// ends it.
func TestMakeDebugServesAnEditor(t *testing.T) {
	dlv(t)
	t.Run("port", func(t *testing.T) { serveAndAttach(t, "tcp", freePort(t)) })
	t.Run("unix socket", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "debug")
		serveAndAttach(t, "unix", filepath.Join(dir, "dlv.sock"))
		info, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "make debug made the socket's directory for its user alone")
	})
}

func serveAndAttach(t *testing.T, network, addr string) {
	debugAddr := addr
	if network == "unix" {
		debugAddr = "unix:" + addr
	}
	var output bytes.Buffer
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "debug-01-entrypoint", "DEBUG_ADDR="+debugAddr, "ARGS=--version")
	cmd.Env = repo.MakeEnv()
	cmd.Stdout, cmd.Stderr = &output, &output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ended := false
	defer func() {
		if ended {
			return
		}
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // make, Delve and the chapter: the group this test made
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Errorf("make debug's processes still hold its output after SIGKILL: %s", &output)
			}
		}
	}()

	var conn net.Conn
	require.Eventually(t, func() bool {
		var err error
		conn, err = net.Dial(network, addr)
		return err == nil
	}, 5*time.Minute, 200*time.Millisecond, "make debug did not serve on %s: %s", addr, &output)
	client := rpc2.NewClientFromConn(conn)
	_, err := client.CreateBreakpoint(&api.Breakpoint{FunctionName: "main.main"})
	require.NoError(t, err)
	state := <-client.Continue()
	require.NotNil(t, state)
	require.NoError(t, state.Err)
	require.NotNil(t, state.CurrentThread)
	assert.Equal(t, "main.main", state.CurrentThread.Function.Name())
	assert.True(t, strings.HasSuffix(state.CurrentThread.File, "chapters/01-entrypoint/main.go"), state.CurrentThread.File)
	// Delve's binary is in .bin, not a __debug_bin file in the reader's checkout (git status would
	// list it, and a go build meanwhile would stamp the checkout as modified).
	assert.FileExists(t, filepath.Join(root, ".bin", "debug-bin", "01-entrypoint"))
	strays, err := filepath.Glob(filepath.Join(root, "__debug_bin*"))
	require.NoError(t, err)
	assert.Empty(t, strays, "Delve's binary in the checkout")
	require.NoError(t, client.Detach(true))
	select {
	case err := <-exited:
		ended = true
		assert.NoError(t, err, "make debug ends when the editor ends the session: %s", &output)
	case <-time.After(30 * time.Second):
		t.Errorf("make debug still runs after the client detached: %s", &output)
	}
	assert.Contains(t, output.String(), "Delve builds chapters/01-entrypoint and waits on "+debugAddr)
}

// The launch configurations of .vscode/launch.json, sent to Delve's DAP server as VS Code's Go
// extension sends them (${workspaceFolder} replaced by the repository's root), build their chapter
// and stop in its main. TestEditorConfigurationsNameEveryChapter holds every configuration to one
// shape (only the name and the chapter differ), and every chapter is built by its own tests, so
// one configuration of each shape is launched: each more would cost a build of its chapter's
// packages without optimizations and prove nothing new.
func TestLaunchConfigurationsStartThroughDAP(t *testing.T) {
	tier.Long(t, "a chapter built once more, its own packages without optimizations")
	dlv := dlv(t)
	workspace, err := filepath.Abs(root)
	require.NoError(t, err)
	shapes := map[string]bool{}
	for _, c := range readLaunch(t) {
		shape := c
		shape.Name, shape.Program = "", ""
		key, err := json.Marshal(shape)
		require.NoError(t, err)
		if c.Request != "launch" || shapes[string(key)] {
			continue
		}
		shapes[string(key)] = true
		t.Run(c.Name, func(t *testing.T) {
			config := map[string]any{}
			data, err := json.Marshal(c)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &config))
			for key, value := range config {
				if s, ok := value.(string); ok {
					config[key] = strings.ReplaceAll(s, "${workspaceFolder}", workspace)
				}
			}
			config["output"] = filepath.Join(t.TempDir(), "debug-bin") // not in the repository
			stopsInMain(t, dlv, config, "chapters/"+c.Name+"/main.go")
		})
	}
	assert.Len(t, shapes, 1, "the launch configurations have one shape (TestEditorConfigurationsNameEveryChapter)")
}

// stopsInMain runs one DAP session: initialize, launch, a function breakpoint on main.main,
// configurationDone, the stop, disconnect with the program ended.
func stopsInMain(t *testing.T, dlv string, config map[string]any, mainFile string) {
	dir, err := os.MkdirTemp("", "dap-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "dap.sock")
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	defer l.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var output bytes.Buffer
	cmd := exec.CommandContext(ctx, dlv, "dap", "--client-addr=unix:"+socket)
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Wait() }()
	conn, err := l.Accept()
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Minute)))
	r := bufio.NewReader(conn)
	seq := 0
	send := func(m dap.Message) {
		require.NoError(t, dap.WriteProtocolMessage(conn, m))
	}
	request := func(command string) dap.Request {
		seq++
		return dap.Request{ProtocolMessage: dap.ProtocolMessage{Seq: seq, Type: "request"}, Command: command}
	}
	await := func(what string, done func(dap.Message) bool) dap.Message {
		for {
			m, err := dap.ReadProtocolMessage(r)
			require.NoError(t, err, "waiting for %s; Delve said: %s", what, &output)
			if e, ok := m.(*dap.ErrorResponse); ok {
				require.Failf(t, "Delve refused", "%s: %s %v", what, e.Message, e.Body.Error)
			}
			if resp, ok := m.(dap.ResponseMessage); ok && !resp.GetResponse().Success {
				require.Failf(t, "Delve refused", "%s: %s", what, resp.GetResponse().Message)
			}
			if done(m) {
				return m
			}
		}
	}

	send(&dap.InitializeRequest{Request: request("initialize"), Arguments: dap.InitializeRequestArguments{
		ClientID: "vscode", AdapterID: "go", PathFormat: "path", LinesStartAt1: true, ColumnsStartAt1: true}})
	await("initialize", func(m dap.Message) bool { _, ok := m.(*dap.InitializeResponse); return ok })
	arguments, err := json.Marshal(config)
	require.NoError(t, err)
	send(&dap.LaunchRequest{Request: request("launch"), Arguments: arguments})
	await("the build and launch", func(m dap.Message) bool { _, ok := m.(*dap.InitializedEvent); return ok })
	send(&dap.SetFunctionBreakpointsRequest{Request: request("setFunctionBreakpoints"),
		Arguments: dap.SetFunctionBreakpointsArguments{Breakpoints: []dap.FunctionBreakpoint{{Name: "main.main"}}}})
	await("setFunctionBreakpoints", func(m dap.Message) bool { _, ok := m.(*dap.SetFunctionBreakpointsResponse); return ok })
	send(&dap.ConfigurationDoneRequest{Request: request("configurationDone")})
	stopped := await("the stop in main.main", func(m dap.Message) bool { _, ok := m.(*dap.StoppedEvent); return ok }).(*dap.StoppedEvent)
	assert.Equal(t, "function breakpoint", stopped.Body.Reason)
	send(&dap.StackTraceRequest{Request: request("stackTrace"), Arguments: dap.StackTraceArguments{ThreadId: stopped.Body.ThreadId, Levels: 1}})
	trace := await("stackTrace", func(m dap.Message) bool { _, ok := m.(*dap.StackTraceResponse); return ok }).(*dap.StackTraceResponse)
	require.NotEmpty(t, trace.Body.StackFrames)
	assert.Equal(t, "main.main", trace.Body.StackFrames[0].Name)
	require.NotNil(t, trace.Body.StackFrames[0].Source)
	assert.True(t, strings.HasSuffix(trace.Body.StackFrames[0].Source.Path, mainFile), trace.Body.StackFrames[0].Source.Path)
	send(&dap.DisconnectRequest{Request: request("disconnect"), Arguments: &dap.DisconnectArguments{TerminateDebuggee: true}})
	await("disconnect", func(m dap.Message) bool { _, ok := m.(*dap.DisconnectResponse); return ok })
}
