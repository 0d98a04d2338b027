package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Evidence on the node. Some of what doing an exercise leaves is only on the node: the kubelet's
// and containerd's journals (journald, not the files under /var/log that the kubelet's /logs
// serves through the apiserver), a file the README copies there, a process. The checker reads it
// as the README's own steps do, through `minikube ssh` — the workshop runs on minikube, and every
// attendee has it — and first compares the node's machine ID with the Node's, so that what it
// reads is the node of the kubeconfig's cluster.

// nodeMark separates the machine ID from the script's output.
const nodeMark = "--- the workshop check ---"

// maxNodeOutput bounds what the checker reads from the node: lines of a journal, a token.
const maxNodeOutput = 16 << 20

// nodeShell runs a script in node n (bash, as minikube ssh's user, who may sudo) and returns what
// it printed. The script's exit status is not looked at: a grep that finds nothing is an answer.
func nodeShell(ctx context.Context, env Env, n *corev1.Node, script string) (string, error) {
	shell := env.Shell
	if shell == nil {
		shell = minikubeShell(env.Profile)
	}
	out, err := shell(ctx, "cat /etc/machine-id 2>/dev/null; echo '"+nodeMark+"'; "+script+"; true")
	if err != nil {
		return "", err
	}
	text := strings.ReplaceAll(string(out), "\r\n", "\n") // minikube ssh's terminal
	id, rest, ok := strings.Cut(text, nodeMark+"\n")
	if !ok {
		return "", fmt.Errorf("the node's shell did not answer as expected:\n%s", tail(text, 5))
	}
	id = strings.TrimSpace(id)
	id = id[strings.LastIndex(id, "\n")+1:]
	if want := n.Status.NodeInfo.MachineID; want != "" && id != want {
		return "", fmt.Errorf("minikube ssh reached a node whose machine ID is %q, not the node %s of your kubeconfig's cluster (%s): is your current context minikube's, and is it the profile's?", id, n.Name, want)
	}
	return rest, nil
}

// minikubeShell runs scripts with `minikube ssh` (in profile, when not "").
func minikubeShell(profile string) func(context.Context, string) ([]byte, error) {
	return func(ctx context.Context, script string) ([]byte, error) {
		var args []string
		if profile != "" {
			args = append(args, "--profile", profile)
		}
		args = append(args, "ssh", "--", script)
		cmd := exec.CommandContext(ctx, "minikube", args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout = &limitedWriter{w: &stdout, left: maxNodeOutput}
		cmd.Stderr = &limitedWriter{w: &stderr, left: 64 << 10}
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) || errors.Is(err, exec.ErrNotFound) {
				return nil, fmt.Errorf("the node, through minikube ssh%s: %w %s", profileFlag(profile), err, strings.TrimSpace(stderr.String()+" "+tail(stdout.String(), 3)))
			}
			return nil, err
		}
		return stdout.Bytes(), nil
	}
}

func profileFlag(profile string) string {
	if profile == "" {
		return ""
	}
	return " --profile " + profile
}

// limitedWriter keeps the first left bytes and drops the rest.
type limitedWriter struct {
	w    io.Writer
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	n := len(p)
	if l.left <= 0 {
		return n, nil
	}
	if len(p) > l.left {
		p = p[:l.left]
	}
	l.left -= len(p)
	_, err := l.w.Write(p)
	return n, err
}

// journalLine is a line of a systemd unit's journal on the node.
type journalLine struct {
	time    time.Time
	message string // the program's own line (a klog line: "E1130 20:01:02.123456 …")
}

// journal returns the lines of unit's journal on the node that contain one of fixed (grep -F in
// the node, so that only those cross), oldest first.
func journal(ctx context.Context, env Env, n *corev1.Node, unit string, fixed ...string) ([]journalLine, error) {
	var script strings.Builder
	fmt.Fprintf(&script, "sudo journalctl --unit %s --no-pager --output short-unix 2>/dev/null | grep -F", unit)
	for _, f := range fixed {
		if strings.ContainsAny(f, "'\n") {
			return nil, fmt.Errorf("journal: %q cannot be quoted for the node's shell", f)
		}
		fmt.Fprintf(&script, " -e '%s'", f)
	}
	out, err := nodeShell(ctx, env, n, script.String())
	if err != nil {
		return nil, err
	}
	var lines []journalLine
	for _, l := range strings.Split(out, "\n") {
		// 1764532862.123456 minikube kubelet[512]: E1130 20:01:02.123456 … (seconds since 1970:
		// the same in every systemd, whatever its time zone)
		stamp, rest, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		at, err := unixStamp(stamp)
		if err != nil {
			continue
		}
		_, rest, _ = strings.Cut(rest, " ") // the host
		if _, message, ok := strings.Cut(rest, ": "); ok {
			lines = append(lines, journalLine{time: at, message: message})
		}
	}
	return lines, nil
}

// unixStamp reads seconds since 1970 with a fraction: "1764532862.123456".
func unixStamp(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(s, ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	var nanos int64
	if frac != "" {
		if nanos, err = strconv.ParseInt((frac + "000000000")[:9], 10, 64); err != nil {
			return time.Time{}, err
		}
	}
	return time.Unix(secs, nanos), nil
}
