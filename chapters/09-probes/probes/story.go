package probes

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/04-runkubelet/realkubelet"
)

// story walks the steps against one running kubelet.
type story struct {
	ctx     context.Context
	k       *realkubelet.Kubelet
	runtime *answeringRuntime
	answers string
	out     io.Writer
	timeout time.Duration
}

func (s story) walk() error {
	for i, st := range steps {
		mark := s.runtime.mark()
		if err := st.change(s.answers); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st.title, err)
		}
		v, last, err := s.await(st, mark)
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st.title, err)
		}
		fmt.Fprintf(s.out, "\n%2d. %s\n", i+1, st.title)
		fmt.Fprintf(s.out, "    /pods: %s\n", v)
		fmt.Fprintf(s.out, "    probes since the change: startup %s, readiness %s, liveness %s\n", last["started"], last["ready"], last["alive"])
		for _, line := range splitLines(st.lesson) {
			fmt.Fprintf(s.out, "    %s\n", line)
		}
		if i == 0 {
			workers, err := proberWorkers()
			if err != nil {
				return err
			}
			for _, line := range splitLines(workers) {
				fmt.Fprintf(s.out, "    %s\n", line)
			}
		}
	}
	return nil
}

// await asks /pods every 100 ms until the step's outcome shows, and says what it last saw when
// it does not in time.
func (s story) await(st step, mark map[string]int) (podView, map[string]answer, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	var v podView
	var last map[string]answer
	var calls map[string]int
	for {
		pods, err := s.k.Pods(ctx)
		if err == nil {
			v = view(pods)
			last, calls = s.runtime.since(mark)
			if st.done(v, last, calls) {
				return v, last, nil
			}
		}
		select {
		case <-ctx.Done():
			return v, last, fmt.Errorf("not seen within %s; last seen: %s; probes %v, calls %v", s.timeout, v, last, calls)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
