package probes

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
)

// Options say how to run the scenario.
type Options struct {
	// NodeName is the kubelet's node name. Default realkubelet.DefaultNodeName.
	NodeName string
	// StepTimeout bounds the wait for each step's outcome.
	StepTimeout time.Duration
	// Out receives the story.
	Out io.Writer
}

// Manifest is the static pod: one container, three exec probes, each period 1 s.
const Manifest = `apiVersion: v1
kind: Pod
metadata:
  name: probes
  namespace: default
spec:
  containers:
  - name: app
    image: registry.k8s.io/pause:3.10.1
    startupProbe:
      exec: {command: [test, -e, /answers/started]}
      periodSeconds: 1
      failureThreshold: 60
    readinessProbe:
      exec: {command: [test, -e, /answers/ready]}
      periodSeconds: 1
      failureThreshold: 1
    livenessProbe:
      exec: {command: [test, -e, /answers/alive]}
      periodSeconds: 1
      failureThreshold: 3
`

// A step changes the answers, then waits until the kubelet's /pods shows its outcome.
type step struct {
	title  string
	change func(dir string) error
	// done says whether the pod (and the probes' answers since the change) show the outcome. A
	// probe the README shows as run since the change is waited for too: liveness runs on its own
	// period, and a step that ended between two of its runs would print "liveness not run".
	done func(p podView, last map[string]answer, calls map[string]int) bool
	// lesson is printed under the outcome.
	lesson string
}

// podView is what the story prints of the pod, read from /pods.
type podView struct {
	found                  bool
	ready, containersReady string
	readyCount             string
	started                bool
	restarts               int32
	state                  string
}

func (v podView) String() string {
	return fmt.Sprintf("READY %s  Ready=%s  ContainersReady=%s  started=%t  restarts=%d  %s",
		v.readyCount, v.ready, v.containersReady, v.started, v.restarts, v.state)
}

func view(pods []v1.Pod) podView {
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, "probes-") || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		v := podView{found: true, ready: "Unknown", containersReady: "Unknown"}
		for _, c := range p.Status.Conditions {
			switch c.Type {
			case v1.PodReady:
				v.ready = string(c.Status)
			case v1.ContainersReady:
				v.containersReady = string(c.Status)
			}
		}
		cs := p.Status.ContainerStatuses[0]
		ready := 0
		if cs.Ready {
			ready = 1
		}
		v.readyCount = fmt.Sprintf("%d/1", ready)
		v.started = cs.Started != nil && *cs.Started
		v.restarts = cs.RestartCount
		switch {
		case cs.State.Running != nil:
			v.state = "running"
		case cs.State.Waiting != nil:
			v.state = "waiting: " + cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			v.state = "terminated: " + cs.State.Terminated.Reason
		}
		return v
	}
	return podView{}
}

func touch(names ...string) func(string) error {
	return func(dir string) error {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
				return err
			}
		}
		return nil
	}
}

func remove(name string) func(string) error {
	return func(dir string) error { return os.Remove(filepath.Join(dir, name)) }
}

func write(name, content string) func(string) error {
	return func(dir string) error { return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600) }
}

// steps is the story, in order.
var steps = []step{
	{
		title:  "no answers yet: the startup probe fails",
		change: func(string) error { return nil },
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return p.found && p.state == "running" && calls["started"] >= 3
		},
		lesson: "until the startup probe succeeds, the kubelet runs neither readiness nor liveness:\n" +
			"the container runs, not started and not ready",
	},
	{
		title:  "touch started alive: the startup probe succeeds, readiness fails",
		change: touch("started", "alive"),
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return p.started && last["ready"] == failed && last["alive"] == passed && calls["ready"] >= 2
		},
		lesson: "started, so the other two run: liveness passes, readiness fails, and the pod is not Ready",
	},
	{
		title:  "touch ready: readiness succeeds",
		change: touch("ready"),
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return p.readyCount == "1/1" && p.ready == "True" && calls["alive"] >= 1
		},
		lesson: "one success (successThreshold 1) makes the container ready, then ContainersReady and Ready",
	},
	{
		title:  "rm ready: readiness fails again",
		change: remove("ready"),
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return p.readyCount == "0/1" && p.ready == "False" && calls["alive"] >= 1
		},
		lesson: "one failure (failureThreshold 1) takes Ready away; the container keeps running (restarts 0)",
	},
	{
		title:  "touch ready: ready again",
		change: touch("ready"),
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return p.readyCount == "1/1" && p.ready == "True" && calls["alive"] >= 1
		},
		lesson: "readiness is asked every period, for as long as the container runs",
	},
	{
		title:  `echo error > ready: the readiness probe cannot run`,
		change: write("ready", "error\n"),
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return calls["ready"] >= 3 && last["ready"] == unusable && calls["alive"] >= 1
		},
		lesson: "a probe that errors is not a probe that fails: the prober throws the result away, and the\n" +
			"pod stays as it was, Ready, for as long as the errors last (failureThreshold counts failures only)",
	},
	{
		title: "touch ready, rm alive: liveness fails",
		change: func(dir string) error {
			if err := touch("ready")(dir); err != nil {
				return err
			}
			return remove("alive")(dir)
		},
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return p.restarts == 1 && p.started && p.readyCount == "1/1" && last["started"] == passed
		},
		lesson: "three failures (failureThreshold 3): the kubelet kills the container and starts a new one at\n" +
			"once; the new one is started, then ready, only after its own startup and readiness probes succeed",
	},
	{
		title:  "(alive still missing): liveness fails again",
		change: func(string) error { return nil },
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return p.restarts == 2 && p.started && p.readyCount == "1/1" && last["started"] == passed
		},
		lesson: "the second restart waits out a back-off: 10 s after the first, doubling each time, up to\n" +
			"5 minutes (the STATUS column shows CrashLoopBackOff meanwhile)",
	},
	{
		title:  "touch alive: liveness passes",
		change: touch("alive"),
		done: func(p podView, last map[string]answer, calls map[string]int) bool {
			return last["alive"] == passed && calls["alive"] >= 4 && p.readyCount == "1/1" && p.restarts == 2
		},
		lesson: "the restarts stop; RESTARTS keeps its count, as kubectl shows it",
	},
}

// Run starts the kubelet with the static pod, walks the steps and prints each outcome.
func Run(ctx context.Context, opts Options) error {
	if opts.NodeName == "" {
		opts.NodeName = realkubelet.DefaultNodeName
	}
	work, err := os.MkdirTemp("", "probes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	manifests, answers := filepath.Join(work, "manifests"), filepath.Join(work, "answers")
	for _, d := range []string{manifests, answers} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(manifests, "probes.yaml"), []byte(Manifest), 0o600); err != nil {
		return err
	}
	var runtime *answeringRuntime
	k, err := realkubelet.Start(ctx, realkubelet.Options{
		NodeName:      opts.NodeName,
		StaticPodPath: manifests,
		Dependencies: func(deps *kubelet.Dependencies) {
			runtime = newAnsweringRuntime(deps.RemoteRuntimeService, answers)
			deps.RemoteRuntimeService = runtime
			// The hollow node has prober/testing's FakeManager, which runs no probe and
			// reports every container ready; without one, NewMainKubelet builds the real
			// prober.NewManager.
			deps.ProbeManager = nil
		},
	})
	if err != nil {
		return err
	}
	defer k.Stop()

	s := story{ctx: ctx, k: k, runtime: runtime, answers: answers, out: opts.Out, timeout: opts.StepTimeout}
	fmt.Fprintf(s.out, "The real kubelet (k8s.io/kubernetes %s) runs in this process as node %q, standalone,\n", realkubelet.Version(), opts.NodeName)
	fmt.Fprintf(s.out, "with one static pod, probes, whose container has three exec probes, each every second:\n")
	fmt.Fprintf(s.out, "  startup    test -e /answers/started   failureThreshold 60\n")
	fmt.Fprintf(s.out, "  readiness  test -e /answers/ready     failureThreshold 1\n")
	fmt.Fprintf(s.out, "  liveness   test -e /answers/alive     failureThreshold 3\n")
	fmt.Fprintf(s.out, "The runtime answers each from a directory of files: exit 0 when the file exists, exit 1 when\n")
	fmt.Fprintf(s.out, "it does not, and no answer at all (the command could not run) when it holds \"error\".\n")
	fmt.Fprintf(s.out, "Each step changes the files, then waits for the kubelet's /pods to show the outcome.\n")
	return s.walk()
}
