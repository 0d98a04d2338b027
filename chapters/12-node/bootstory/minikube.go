package bootstory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Minikube reaches a minikube profile's node the way a reader does: with the minikube command.
type Minikube struct {
	// Binary is the minikube command ("minikube": the one on PATH).
	Binary string
	// Profile is the profile ("minikube", minikube's default).
	Profile string
	// Command makes the command that runs a program; nil is exec.CommandContext (the lab's
	// Command runs it in the lab).
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
}

func (m Minikube) command(ctx context.Context, args ...string) *exec.Cmd {
	if m.Command != nil {
		return m.Command(ctx, m.Binary, args...)
	}
	return exec.CommandContext(ctx, m.Binary, args...)
}

// Output runs a command in the node as root: `minikube -p PROFILE ssh -- sudo ARGS…`. minikube
// joins the arguments with spaces and the node's shell splits them again (cmd/minikube/cmd/ssh.go),
// so each is quoted for that shell. Its terminal turns "\n" into "\r\n", which Output undoes.
func (m Minikube) Output(ctx context.Context, args ...string) ([]byte, error) {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	cmd := m.command(ctx, append([]string{"-p", m.Profile, "ssh", "--", "sudo"}, quoted...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	out = bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))
	if err != nil {
		return out, fmt.Errorf("minikube ssh -- sudo %s: %w: %s", strings.Join(args, " "), err, lastLine(string(out)+stderr.String()))
	}
	return out, nil
}

// shellQuote quotes s for a POSIX shell, unless it needs no quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Profile is what `minikube profile list -o json` says of one profile.
type Profile struct {
	Name   string
	Status string
	Config struct {
		Driver           string
		KubernetesConfig struct {
			KubernetesVersion string
			ContainerRuntime  string
		}
		Nodes []struct {
			Name         string
			IP           string
			ControlPlane bool
		}
	}
}

// ErrNoProfile says the profile does not exist or does not run.
var ErrNoProfile = errors.New("no running minikube profile")

// LookUp looks the profile up: `minikube profile list -o json`.
func (m Minikube) LookUp(ctx context.Context) (Profile, error) {
	out, err := m.command(ctx, "profile", "list", "--output", "json").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && len(exit.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, lastLine(string(exit.Stderr)))
		}
		var notFound *exec.Error
		if errors.As(err, &notFound) {
			return Profile{}, fmt.Errorf("no %s command: install minikube (minikube.sigs.k8s.io/docs/start), or name it with --minikube", m.Binary)
		}
		// minikube exits 85 (MK_USAGE_NO_PROFILE) when there is no profile at all.
		if errors.As(err, &exit) && strings.Contains(string(exit.Stderr)+string(out), "No minikube profile") {
			return Profile{}, fmt.Errorf("%w %q: %s", ErrNoProfile, m.Profile, startAdvice)
		}
		return Profile{}, fmt.Errorf("minikube profile list: %w", err)
	}
	var list struct{ Valid, Invalid []Profile }
	if err := json.Unmarshal(out, &list); err != nil {
		return Profile{}, fmt.Errorf("minikube profile list: %w", err)
	}
	for _, p := range list.Valid {
		if p.Name != m.Profile {
			continue
		}
		if p.Status != "OK" && p.Status != "Running" {
			return p, fmt.Errorf("%w: profile %q is %s: %s", ErrNoProfile, m.Profile, p.Status, startAdvice)
		}
		return p, nil
	}
	return Profile{}, fmt.Errorf("%w %q: %s", ErrNoProfile, m.Profile, startAdvice)
}

// startAdvice is what a reader without a running profile can do.
const startAdvice = "start one with `minikube start --driver=docker --container-runtime=containerd`"
