package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/02-config/configload"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/10-pressure/pressure"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/kubeletlog"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/netns"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/support/program"
)

// pressureOptions are the chapter's flags.
type pressureOptions struct {
	config           string
	scenario         string
	kubeletLog       string
	timeout          time.Duration
	transitionPeriod time.Duration
	runFor           time.Duration
	maxRestartPeriod time.Duration
	starts           int
	pullDelay        time.Duration

	// Read by complete: the configuration as the kubelet loads it, the scenario and the static pods.
	kubeletConfig *kubeletconfig.KubeletConfiguration
	loaded        *pressure.Scenario
	static        []*corev1.Pod
}

// NewPressureCommand builds the chapter's command: the eviction story, and one sub-command for
// each of the other troubles.
func NewPressureCommand(ctx context.Context) *cobra.Command {
	o := &pressureOptions{}
	cmd := o.newStory("10-pressure",
		"Memory pressure on the real kubelet: MemoryPressure, the eviction order, evicted pods and the static pod that stays (a mini-cluster in a private network namespace)",
		func(cmd *cobra.Command) error {
			if err := o.complete(true); err != nil {
				return err
			}
			return o.inPrivateNetwork(ctx, cmd, func(ctx context.Context) error {
				return pressure.RunEviction(ctx, pressure.EvictionOptions{
					Config: o.kubeletConfig, ConfigFile: o.config, Scenario: o.loaded, Static: o.static, ScenarioFile: o.scenario,
					TransitionPeriod: o.transitionPeriod, StepTimeout: o.timeout, Out: cmd.OutOrStdout(),
				})
			})
		})
	f := cmd.PersistentFlags()
	f.StringVar(&o.config, "config", "examples/kubelet-config.yaml", "the kubelet's configuration file: the reading notes' by default")
	f.StringVar(&o.kubeletLog, "kubelet-log", "", `file for the kubelet's own log lines; "-" for stderr; default: a temporary file removed on exit`)
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long each step may take to show its outcome (on top of the kubelet's own periods)")
	cmd.Flags().StringVar(&o.scenario, "scenario", "chapters/10-pressure/node.yaml", "the node's memory and each pod's working set, and the pods to create")
	cmd.Flags().DurationVar(&o.transitionPeriod, "pressure-transition-period", 30*time.Second, "the kubelet's evictionPressureTransitionPeriod (its default: 5m)")
	cmd.AddCommand(newQoSCommand(o), newBackOffCommand(ctx, o), newPLEGCommand(ctx, o), newPullsCommand(ctx, o))
	return cmd
}

// newStory builds one of the chapter's commands: it takes no arguments, checks every flag
// (validate), then runs the story.
func (o *pressureOptions) newStory(use, short string, story func(cmd *cobra.Command) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return story(cmd)
		},
	}
}

// newQoSCommand prints the QoS class, cgroup and oom_score_adj of the scenario's pods.
func newQoSCommand(o *pressureOptions) *cobra.Command {
	cmd := o.newStory("qos",
		"Each pod's QoS class, its cgroup under either cgroup driver and its containers' oom_score_adj, from the kubelet's own functions",
		func(cmd *cobra.Command) error {
			if err := o.complete(true); err != nil {
				return err
			}
			pods := append([]*corev1.Pod{}, o.static...)
			for i := range o.loaded.Pods {
				pods = append(pods, &o.loaded.Pods[i])
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "The pods of %s and the static pods of %s on a node of %s, as the\n", o.scenario, pressure.Relative(o.kubeletConfig.StaticPodPath), o.loaded.Memory.String())
			fmt.Fprintf(out, "kubelet (k8s.io/kubernetes %s) classes them (GetPodQOS), names their cgroups with cgroupsPerQOS,\n", realkubelet.Version())
			fmt.Fprintf(out, "the default (the pod container manager), and sets their containers' oom_score_adj\n")
			fmt.Fprintf(out, "(GetContainerOOMScoreAdjust). No kubelet runs: these are its functions, called.\n\n")
			return pressure.PrintQoS(out, pressure.SortedPods(pods), o.loaded.Memory.Value(), types.NodeName(realkubelet.DefaultNodeName))
		})
	cmd.Flags().StringVar(&o.scenario, "scenario", "chapters/10-pressure/node.yaml", "the node's memory and the pods")
	return cmd
}

// newBackOffCommand is the CrashLoopBackOff story.
func newBackOffCommand(ctx context.Context, o *pressureOptions) *cobra.Command {
	cmd := o.newStory("backoff", "A container that keeps exiting, and the back-off the real kubelet waits before each restart",
		func(cmd *cobra.Command) error {
			return o.standalone(ctx, cmd, func(ctx context.Context) error {
				return pressure.RunBackOff(ctx, pressure.BackOffOptions{RunFor: o.runFor, MaxRestartPeriod: o.maxRestartPeriod,
					Starts: o.starts, StepTimeout: o.timeout, Out: cmd.OutOrStdout()})
			})
		})
	cmd.Flags().DurationVar(&o.runFor, "run-for", time.Second, "how long each start of the container runs before it exits")
	cmd.Flags().DurationVar(&o.maxRestartPeriod, "max-restart-period", 30*time.Second, "the kubelet's crashLoopBackOff.maxContainerRestartPeriod: 1s to 5m")
	cmd.Flags().IntVar(&o.starts, "starts", 6, "how many starts of the container to watch: 2 to 20")
	return cmd
}

// newPLEGCommand is the "PLEG is not healthy" story.
func newPLEGCommand(ctx context.Context, o *pressureOptions) *cobra.Command {
	return o.newStory("pleg",
		`A runtime that stops answering the PLEG's relist, and "PLEG is not healthy" in the Node's Ready condition after the kubelet's three minutes (a mini-cluster in a private network namespace)`,
		func(cmd *cobra.Command) error {
			if err := o.complete(false); err != nil {
				return err
			}
			return o.inPrivateNetwork(ctx, cmd, func(ctx context.Context) error {
				return pressure.RunPLEG(ctx, pressure.PLEGOptions{Config: o.kubeletConfig, StepTimeout: o.timeout, Out: cmd.OutOrStdout()})
			})
		})
}

// newPullsCommand is the image pulls story.
func newPullsCommand(ctx context.Context, o *pressureOptions) *cobra.Command {
	cmd := o.newStory("pulls", "Three pods' images pulled with serializeImagePulls true and false, from an image service whose pulls take a delay",
		func(cmd *cobra.Command) error {
			if err := o.complete(false); err != nil {
				return err
			}
			return o.standalone(ctx, cmd, func(ctx context.Context) error {
				return pressure.RunPulls(ctx, pressure.PullsOptions{Delay: o.pullDelay, NotesSetting: o.kubeletConfig.SerializeImagePulls,
					StepTimeout: o.timeout, Out: cmd.OutOrStdout()})
			})
		})
	cmd.Flags().DurationVar(&o.pullDelay, "pull-delay", 2*time.Second, "how long each PullImage takes to answer: 1s to 1m")
	return cmd
}

// validate checks every flag before anything starts: those a story does not have keep their
// defaults, which pass.
func (o *pressureOptions) validate() error {
	if err := program.Positive("--timeout", o.timeout); err != nil {
		return err
	}
	if o.kubeletLog != "" && o.kubeletLog != "-" {
		if err := program.Absent("--kubelet-log", o.kubeletLog); err != nil {
			return err
		}
	}
	switch {
	case o.transitionPeriod < 0:
		return fmt.Errorf("--pressure-transition-period %s: must not be negative", o.transitionPeriod)
	case o.runFor <= 0:
		return fmt.Errorf("--run-for %s: must be more than 0", o.runFor)
	case o.starts < 2 || o.starts > 20:
		return fmt.Errorf("--starts %d: 2 to 20", o.starts)
	case o.maxRestartPeriod < time.Second || o.maxRestartPeriod > 5*time.Minute:
		// The kubelet's own bounds (pkg/kubelet/apis/config/validation/validation.go#L254-L256
		// (utilvalidation.IsInRange)).
		return fmt.Errorf("--max-restart-period %s: 1s to 5m0s, as the kubelet allows", o.maxRestartPeriod)
	case o.pullDelay < time.Second || o.pullDelay > time.Minute:
		return fmt.Errorf("--pull-delay %s: 1s to 1m0s", o.pullDelay)
	}
	return nil
}

// complete loads the kubelet's configuration as the kubelet does (chapter 02's configload) and,
// when the story needs it, the scenario and the static pods.
func (o *pressureOptions) complete(scenario bool) error {
	config, err := configload.LoadConfigFile(context.Background(), o.config)
	if err != nil {
		return fmt.Errorf("--config %s: %w", o.config, err)
	}
	o.kubeletConfig = config
	if !scenario {
		return nil
	}
	o.loaded, o.static, err = pressure.LoadScenario(o.scenario, config.StaticPodPath, types.NodeName(realkubelet.DefaultNodeName))
	if err != nil {
		return fmt.Errorf("--scenario %s: %w", o.scenario, err)
	}
	return nil
}

// inPrivateNetwork runs story inside a private network namespace (this program again, in one),
// with the configuration's address on its lo: the mini-cluster's node has it.
func (o *pressureOptions) inPrivateNetwork(ctx context.Context, cmd *cobra.Command, story func(context.Context) error) error {
	ctx, stop := program.SignalContext(ctx)
	defer stop()
	privateIP, inside := netns.Inside()
	if !inside {
		return netns.Rerun(ctx, os.Args[1:]...)
	}
	if ip := net.ParseIP(o.kubeletConfig.Address); ip == nil || ip.IsUnspecified() {
		o.kubeletConfig.Address = privateIP // "0.0.0.0": every address; the namespace's own one
	} else if err := netns.AddAddress(o.kubeletConfig.Address); err != nil {
		return err
	}
	defer realkubelet.RemoveRootDirs()
	_, closeLog, err := kubeletlog.ForProgram(cmd, o.kubeletLog)
	if err != nil {
		return err
	}
	defer closeLog()
	return story(ctx)
}

// standalone runs story with the kubelet's log where --kubelet-log says.
func (o *pressureOptions) standalone(ctx context.Context, cmd *cobra.Command, story func(context.Context) error) error {
	ctx, stop := program.SignalContext(ctx)
	defer stop()
	defer realkubelet.RemoveRootDirs() // last: a stopped kubelet's pod workers may make it again
	_, closeLog, err := kubeletlog.ToFile(o.kubeletLog)
	if err != nil {
		return err
	}
	defer closeLog()
	return story(ctx)
}
