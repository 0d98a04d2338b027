package pressure

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
)

// PullsOptions say how to run the image pulls story.
type PullsOptions struct {
	// Delay is how long this chapter's image service takes to answer each PullImage.
	Delay time.Duration
	// NotesSetting is serializeImagePulls as the reading notes' configuration sets it.
	NotesSetting bool
	// StepTimeout bounds the wait for each kubelet's pulls.
	StepTimeout time.Duration
	// Out receives the story.
	Out io.Writer
}

// pullImages are the three pods' images: each pod has one of them, and the runtime has none.
var pullImages = []string{"registry.k8s.io/nginx-slim:0.27", "registry.k8s.io/e2e-test-images/agnhost:2.53", "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"}

// slowImages is the kubelet's image service with each pull answered after a delay: a registry
// that takes that long, for every image alike.
type slowImages struct {
	internalapi.ImageManagerService
	delay time.Duration
}

func (s slowImages) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return s.ImageManagerService.PullImage(ctx, image, auth, sandbox)
}

// pulledEvent is the kubelet's Pulled event
// (pkg/kubelet/images/image_manager.go#L381-L382 (events.PulledImage)): the pull's own time, and the time from the pod's request, its wait for a turn included.
var pulledEvent = regexp.MustCompile(`^Normal Pulled Successfully pulled image "([^"]+)" in (\S+) \((\S+) including waiting\)`)

// A pull is one image's Pulled event.
type pull struct {
	image           string
	took, withQueue time.Duration
}

// RunPulls runs the real kubelet standalone twice with three static pods of three images,
// first with serializeImagePulls true, then false, and prints how long each pull took as the
// kubelet's own events say.
func RunPulls(ctx context.Context, opts PullsOptions) error {
	fmt.Fprintf(opts.Out, "The real kubelet (k8s.io/kubernetes %s) runs standalone, twice, with three static pods of\n", realkubelet.Version())
	fmt.Fprintf(opts.Out, "three images the runtime does not have. This chapter's image service answers each PullImage\n")
	fmt.Fprintf(opts.Out, "after %s, as a registry that slow would (a delay the chapter sets, not a registry measured).\n", opts.Delay)
	fmt.Fprintf(opts.Out, "The times are the kubelet's, from its Pulled events, to the nearest second.\n")
	for _, serialize := range []bool{true, false} {
		pulls, err := runPulls(ctx, opts, serialize)
		if err != nil {
			return fmt.Errorf("serializeImagePulls %t: %w", serialize, err)
		}
		fmt.Fprintf(opts.Out, "\nserializeImagePulls: %t", serialize)
		switch {
		case serialize:
			fmt.Fprintf(opts.Out, " (the kubelet's default: one pull at a time, in the order asked)\n")
		case serialize == opts.NotesSetting:
			fmt.Fprintf(opts.Out, " (the reading notes' setting; maxParallelImagePulls unset: no limit)\n")
		default:
			fmt.Fprintf(opts.Out, " (maxParallelImagePulls unset: no limit)\n")
		}
		for i, p := range pulls {
			fmt.Fprintf(opts.Out, "  pull %d: pulled in %s, %s including the wait for its turn\n", i+1, seconds(p.took), seconds(p.withQueue))
		}
		fmt.Fprintf(opts.Out, "  the three pods had their images %s after they asked\n", seconds(pulls[len(pulls)-1].withQueue))
	}
	return nil
}

// runPulls starts one kubelet and waits for its three Pulled events, in the order of the time
// each pod waited.
func runPulls(ctx context.Context, opts PullsOptions, serialize bool) ([]pull, error) {
	work, err := os.MkdirTemp("", "kubelet-walkthrough-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	for i, image := range pullImages {
		name := fmt.Sprintf("pull-%c", 'a'+i)
		manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: default\nspec:\n  containers:\n  - name: app\n    image: %s\n", name, image)
		if err := os.WriteFile(filepath.Join(work, name+".yaml"), []byte(manifest), 0o600); err != nil {
			return nil, err
		}
	}
	events := newEventLog()
	k, err := realkubelet.Start(ctx, realkubelet.Options{
		StaticPodPath: work,
		Configure: func(_ *options.KubeletFlags, config *kubeletconfig.KubeletConfiguration) {
			config.SerializeImagePulls = serialize
			config.MaxParallelImagePulls = nil
		},
		Dependencies: func(deps *kubelet.Dependencies) {
			deps.Recorder = events.recorder
			deps.RemoteImageService = slowImages{ImageManagerService: deps.RemoteImageService, delay: opts.Delay}
		},
	})
	if err != nil {
		return nil, err
	}
	defer k.Stop()
	drainCtx, stop := context.WithCancel(ctx)
	defer stop()
	go events.drain(drainCtx)
	var pulls []pull
	err = poll(ctx, opts.StepTimeout+time.Duration(len(pullImages))*opts.Delay, "three Pulled events", func() (bool, string, error) {
		pulled := events.all("Pulled")
		pulls = pulls[:0]
		for _, e := range pulled {
			m := pulledEvent.FindStringSubmatch(e)
			if m == nil {
				return false, "", fmt.Errorf("a Pulled event this chapter cannot read: %q", e)
			}
			took, err1 := time.ParseDuration(m[2])
			withQueue, err2 := time.ParseDuration(m[3])
			if err1 != nil || err2 != nil {
				return false, "", fmt.Errorf("the times of %q", e)
			}
			pulls = append(pulls, pull{image: m[1], took: took, withQueue: withQueue})
		}
		return len(pulls) == len(pullImages), fmt.Sprintf("%d Pulled events", len(pulls)), nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(pulls, func(i, j int) bool { return pulls[i].withQueue < pulls[j].withQueue })
	return pulls, nil
}

// seconds is a duration to the nearest second: 2s.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.0fs", math.Round(d.Seconds()))
}
