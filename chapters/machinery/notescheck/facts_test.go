package notescheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claim is a sentence the notes make about what the source does, in each note that makes it,
// and the check of the pinned source it rests on. A claim fails when a note no longer says it
// (a fix reverted, a sentence rewritten), when a note says what it replaced, or when the source
// no longer holds it.
type claim struct {
	name string
	// says maps a note to the phrases it must contain; white space is ignored, so that a
	// phrase may wrap.
	says map[string][]string
	// denies maps a note to phrases it must not contain: the wrong sentence the claim fixed.
	denies map[string][]string
	holds  func(s *Source) error
}

// gateIs checks the latest stage of a feature gate of the pinned version.
func gateIs(name string, want GateStage) func(*Source) error {
	return func(s *Source) error {
		g, ok, err := s.FeatureGate(name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s declares no feature gate %s", featuresFile, name)
		}
		if got := g.Latest(); got != want {
			return fmt.Errorf("feature gate %s is %s, not %s", name, got, want)
		}
		return nil
	}
}

// gateHistory checks every stage of a feature gate, oldest first.
func gateHistory(name string, want ...GateStage) func(*Source) error {
	return func(s *Source) error {
		g, ok, err := s.FeatureGate(name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s declares no feature gate %s", featuresFile, name)
		}
		if !slices.Equal(g.Stages, want) {
			return fmt.Errorf("feature gate %s has the stages %v, not %v", name, g.Stages, want)
		}
		return nil
	}
}

// relistsOnlyOnStop: the evented PLEG's one call of RequestRelist runs only for a container
// stopped event, and no other event type decides it.
func relistsOnlyOnStop(s *Source) error {
	guards, err := s.Guards("pkg/kubelet/pleg/evented.go", "func (e *EventedPLEG) processCRIEvents", "RequestRelist")
	if err != nil {
		return err
	}
	if len(guards) != 1 {
		return fmt.Errorf("processCRIEvents calls RequestRelist %d times, not once", len(guards))
	}
	const stopped = "!(event.ContainerEventType != runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)"
	if !slices.Contains(guards[0], stopped) {
		return fmt.Errorf("RequestRelist runs under %q, not only for a stopped container", guards[0])
	}
	for _, g := range guards[0] {
		if g != stopped && strings.Contains(g, "ContainerEventType") {
			return fmt.Errorf("RequestRelist also depends on %s", g)
		}
	}
	return nil
}

// gateAbsent checks that the pinned version declares no feature gate of that name.
func gateAbsent(name string) func(*Source) error {
	return func(s *Source) error {
		if _, ok, err := s.FeatureGate(name); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%s still declares the feature gate %s", featuresFile, name)
		}
		return nil
	}
}

// all checks each fact in turn.
func all(facts ...func(*Source) error) func(*Source) error {
	return func(s *Source) error {
		for _, f := range facts {
			if err := f(s); err != nil {
				return err
			}
		}
		return nil
	}
}

// fencedBlock is a fenced block of Markdown: its language, and its text.
var fencedBlock = regexp.MustCompile("(?ms)^```(\\w*)\\n(.*?)^```")

// selectExcerpt checks the select that note 07 quotes, trimmed, against syncLoopIteration.
func selectExcerpt(note string) func(*Source) error {
	return func(s *Source) error {
		data, err := os.ReadFile(filepath.FromSlash(note))
		if err != nil {
			return err
		}
		for _, m := range fencedBlock.FindAllStringSubmatch(string(data), -1) {
			if m[1] == "go" && strings.HasPrefix(m[2], "select {") {
				return s.Excerpt("pkg/kubelet/kubelet.go", "func (kl *Kubelet) syncLoopIteration", m[2])
			}
		}
		return fmt.Errorf("%s quotes no select", note)
	}
}

// claims lists every sentence of the notes that states a fact about the source without a
// citation that could hold it.
var claims = []claim{
	{
		name: "EventedPLEG is alpha and off by default",
		says: map[string][]string{
			"07-syncloop.md":    {"It is alpha and off by default (`EventedPLEG`)"},
			"zh/07-syncloop.md": {"它是 alpha，默认关闭（`EventedPLEG`）"},
		},
		holds: gateIs("EventedPLEG", GateStage{Version: "1.26", PreRelease: "Alpha"}),
	},
	{
		name: "the evented PLEG requests a relist only for a container-stopped event",
		says: map[string][]string{
			"07-syncloop.md":    {"it requests a relist only for a container-stopped event", "skips every other kind, created, started and deleted"},
			"zh/07-syncloop.md": {"只在收到容器停止事件时才请求重新列举", "跳过其余各类事件（创建、启动、删除）"},
		},
		denies: map[string][]string{
			"07-syncloop.md":    {"turns each event into a `RequestRelist`"},
			"zh/07-syncloop.md": {"把每个事件变成一次 `RequestRelist`"},
		},
		holds: relistsOnlyOnStop,
	},
	{
		name: "startKubelet starts the podresources server with no gate; KubeletPodResources is gone",
		says: map[string][]string{
			"drift.md": {
				"the podresources server started only under `if utilfeature.DefaultFeatureGate.Enabled(features.KubeletPodResources) {`",
				"v1.37.2 declares no `KubeletPodResources` gate",
				"with no condition in `startKubelet`",
			},
			"zh/drift.md": {
				"podresources 服务器只在 `if utilfeature.DefaultFeatureGate.Enabled(features.KubeletPodResources) {` 成立时才启动",
				"v1.37.2 中已没有名为 `KubeletPodResources` 的门控",
				"在 `startKubelet` 中不加任何条件的 [`go k.ListenAndServePodResources(ctx)`]",
			},
		},
		denies: map[string][]string{
			"drift.md":    {"`go k.ListenAndServePodResources()` with no feature gate"},
			"zh/drift.md": {"不检查任何特性门控的"},
		},
		holds: all(
			gateAbsent("KubeletPodResources"),
			gateIs("KubeletPodResourcesGet", GateStage{Version: "1.36", Default: true, PreRelease: "GA", Locked: true}),
			func(s *Source) error {
				return s.Unconditional("cmd/kubelet/app/server.go", "func startKubelet", "go k.ListenAndServePodResources(ctx)")
			}),
	},
	{
		name: "a new pod worker may or may not be woken for its first sync: UpdatePod starts it before its non-blocking send",
		says: map[string][]string{
			"07-syncloop.md":    {"scheduling race, not a rule", "and only then makes its non-blocking send"},
			"zh/07-syncloop.md": {"那是调度上的竞争，不是规则", "最后才做非阻塞发送"},
		},
		denies: map[string][]string{
			"07-syncloop.md":    {"Nothing *woke* that goroutine for its first sync"},
			"zh/07-syncloop.md": {"第一次同步时，没有谁*唤醒*这个 goroutine"},
		},
		holds: all(
			func(s *Source) error {
				return s.InOrder("pkg/kubelet/pod_workers.go", "func (p *podWorkers) UpdatePod",
					"podUpdates = make(chan struct{}, 1)", "go func() {", "select {", "case podUpdates <- struct{}{}:", "default:")
			},
			func(s *Source) error {
				return s.InOrder("pkg/kubelet/pod_workers.go", "func (p *podWorkers) podWorkerLoop", "for range podUpdates {")
			}),
	},
	{
		name: "the pod worker has four paths, SyncTerminatingRuntimePod among them",
		says: map[string][]string{
			"07-syncloop.md":    {"calls one of four methods", "[`func (kl *Kubelet) SyncTerminatingRuntimePod`]"},
			"zh/07-syncloop.md": {"调用四个方法之一", "[`func (kl *Kubelet) SyncTerminatingRuntimePod`]"},
		},
		denies: map[string][]string{
			"07-syncloop.md":    {"calls one of three methods"},
			"zh/07-syncloop.md": {"调用三个方法之一"},
		},
		holds: func(s *Source) error {
			got, err := s.Callees("pkg/kubelet/pod_workers.go", "func (p *podWorkers) podWorkerLoop", "p.podSyncer")
			if err != nil {
				return err
			}
			if want := []string{"SyncPod", "SyncTerminatedPod", "SyncTerminatingPod", "SyncTerminatingRuntimePod"}; !slices.Equal(got, want) {
				return fmt.Errorf("podWorkerLoop calls %v on its podSyncer, not %v", got, want)
			}
			return nil
		},
	},
	{
		name: "updateRuntimeUp has more callers than its 5 s loop: the node status goroutine and fastNodeStatusUpdate",
		says: map[string][]string{
			"07-syncloop.md":    {"That loop is not the only caller", "[`func (kl *Kubelet) fastNodeStatusUpdate`]"},
			"zh/07-syncloop.md": {"这个循环并不是唯一的调用者", "[`func (kl *Kubelet) fastNodeStatusUpdate`]"},
		},
		holds: func(s *Source) error {
			got, err := s.Referrers("pkg/kubelet", "kl.updateRuntimeUp")
			if err != nil {
				return err
			}
			if want := []string{"func (kl *Kubelet) Run", "func (kl *Kubelet) fastNodeStatusUpdate"}; !slices.Equal(got, want) {
				return fmt.Errorf("kl.updateRuntimeUp is used by %v, not %v", got, want)
			}
			return s.InOrder("pkg/kubelet/kubelet.go", "func (kl *Kubelet) Run",
				"kl.updateRuntimeUp(ctx)", "go kl.fastStatusUpdateOnce(", "go wait.UntilWithContext(ctx, kl.updateRuntimeUp, 5*time.Second)")
		},
	},
	{
		name: "the select of syncLoopIteration, trimmed, is the one v1.37.2 has",
		says: map[string][]string{
			"07-syncloop.md":    {"```go\nselect {\ncase u, open := <-configCh:", "case <-housekeepingCh:"},
			"zh/07-syncloop.md": {"```go\nselect {\ncase u, open := <-configCh:", "case <-housekeepingCh:"},
		},
		holds: all(selectExcerpt("07-syncloop.md"), selectExcerpt("zh/07-syncloop.md")),
	},
	{
		name: "the sync loop backs off from 100 ms, doubling up to 5 s, while the runtime is not healthy",
		says: map[string][]string{
			"07-syncloop.md":    {"sleeps with a back-off (100 ms, doubling up to 5 s)"},
			"zh/07-syncloop.md": {"休眠时间从 100 毫秒起每次翻倍，最长 5 秒"},
		},
		holds: func(s *Source) error {
			return s.InOrder("pkg/kubelet/kubelet.go", "func (kl *Kubelet) syncLoop",
				"base   = 100 * time.Millisecond", "max    = 5 * time.Second", "factor = 2",
				"if err := kl.runtimeState.runtimeErrors(); err != nil {", "time.Sleep(duration)")
		},
	},
	{
		name: "PLEGOnDemandRelist is GA and locked on in v1.37",
		says: map[string][]string{
			"07-syncloop.md":    {"`PLEGOnDemandRelist` is GA and locked on in v1.37"},
			"zh/07-syncloop.md": {"`PLEGOnDemandRelist` 在 v1.37 已 GA 并锁定为开启"},
		},
		holds: gateIs("PLEGOnDemandRelist", GateStage{Version: "1.37", Default: true, PreRelease: "GA", Locked: true}),
	},
	{
		name: "KubeletPodResourcesGet is GA and locked on since v1.36",
		says: map[string][]string{
			"05-bootstrap.md":    {"That gate is GA and locked on since v1.36"},
			"zh/05-bootstrap.md": {"该特性门控自 v1.36 起已 GA 并锁定为开启"},
		},
		holds: gateIs("KubeletPodResourcesGet", GateStage{Version: "1.36", Default: true, PreRelease: "GA", Locked: true}),
	},
	{
		name: "PodsAPI was alpha in v1.36 and is beta, on by default, in v1.37",
		says: map[string][]string{
			"05-bootstrap.md":    {"alpha in v1.36 and beta, on by default, in v1.37"},
			"zh/05-bootstrap.md": {"在 v1.36 中为 alpha，在 v1.37 中为 beta 且默认开启"},
			"07-syncloop.md":     {"the `PodsAPI` gate, beta and on"},
			"zh/07-syncloop.md":  {"`PodsAPI`门控，beta，默认开启"},
		},
		holds: gateHistory("PodsAPI",
			GateStage{Version: "1.36", PreRelease: "Alpha"},
			GateStage{Version: "1.37", Default: true, PreRelease: "Beta"}),
	},
}

// notePhrases checks what one claim says and denies in the notes, and returns what is wrong.
func notePhrases(c claim, read func(note string) (string, error)) []string {
	var out []string
	for note, phrases := range c.says {
		text, err := read(note)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		for _, p := range phrases {
			if !strings.Contains(squash(text), squash(p)) {
				out = append(out, fmt.Sprintf("%s no longer says %q (%s)", note, p, c.name))
			}
		}
	}
	for note, phrases := range c.denies {
		text, err := read(note)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		for _, p := range phrases {
			if strings.Contains(squash(text), squash(p)) {
				out = append(out, fmt.Sprintf("%s says %q again, which the source contradicts (%s)", note, p, c.name))
			}
		}
	}
	return out
}

// TestClaimsHold: every claim is made by the notes that make it, in both languages, and holds
// in the pinned source.
func TestClaimsHold(t *testing.T) {
	src := NewSource(pinned(t), pinned(t))
	read := func(note string) (string, error) {
		data, err := os.ReadFile(filepath.FromSlash(note))
		return string(data), err
	}
	for _, c := range claims {
		t.Run(c.name, func(t *testing.T) {
			require.NotEmpty(t, c.says, "a claim names the notes that make it")
			for _, problem := range notePhrases(c, read) {
				t.Error(problem)
			}
			assert.NoError(t, c.holds(src), "the pinned source")
		})
	}
}

// TestFactCheckersCatch proves each check on a small Go file it must accept, and on the same
// file changed the way the kubelet could change, which it must reject.
func TestFactCheckersCatch(t *testing.T) {
	dir := t.TempDir()
	write := func(name, code string) *source {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(code), 0o644))
		src, err := NewSource("test", "test").load(path)
		require.NoError(t, err)
		return src
	}

	features := func(stages string) string {
		return "package features\n\nconst (\n\tGateA featuregate.Feature = \"GateA\"\n)\n\n" +
			"var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{\n\tGateA: {\n" + stages + "\t},\n}\n"
	}
	t.Run("feature gates", func(t *testing.T) {
		src := write("f1.go", features("\t\t{Version: version.MustParse(\"1.36\"), Default: false, PreRelease: featuregate.Alpha},\n"+
			"\t\t{Version: version.MustParse(\"1.37\"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},\n"))
		g, ok, err := src.featureGate("GateA")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, GateStage{Version: "1.37", Default: true, PreRelease: "GA", Locked: true}, g.Latest())
		assert.Len(t, g.Stages, 2)
		_, ok, err = src.featureGate("GateB")
		require.NoError(t, err)
		assert.False(t, ok, "a gate the file does not declare")
	})

	relist := func(guard string) string {
		return "package pleg\n\nfunc (e *W) process(ch <-chan *Event) {\n\tfor event := range ch {\n\t\tif event.Status == nil {\n\t\t\tcontinue\n\t\t}\n" +
			guard + "\t\te.relister.RequestRelist(event.UID)\n\t}\n}\n"
	}
	t.Run("guards", func(t *testing.T) {
		src := write("g1.go", relist("\t\tif event.Type != api.STOPPED {\n\t\t\tcontinue\n\t\t}\n"))
		got, err := src.guards("func (e *W) process", "RequestRelist")
		require.NoError(t, err)
		assert.Equal(t, [][]string{{"!(event.Status == nil)", "!(event.Type != api.STOPPED)"}}, got)

		src = write("g2.go", relist(""))
		got, err = src.guards("func (e *W) process", "RequestRelist")
		require.NoError(t, err)
		assert.Equal(t, [][]string{{"!(event.Status == nil)"}}, got, "every event relists")

		src = write("g3.go", relist("\t\tif event.Type == api.STOPPED {\n\t\t\te.relister.RequestRelist(event.UID)\n\t\t} else {\n\t\t\te.log()\n\t\t}\n"))
		got, err = src.guards("func (e *W) process", "RequestRelist")
		require.NoError(t, err)
		assert.Equal(t, [][]string{{"!(event.Status == nil)", "event.Type == api.STOPPED"}, {"!(event.Status == nil)"}}, got)
	})

	worker := func(calls string) string {
		return "package kubelet\n\nfunc (p *podWorkers) loop() {\n\tswitch {\n" + calls + "\t}\n}\n"
	}
	t.Run("callees", func(t *testing.T) {
		src := write("c1.go", worker("\tcase a:\n\t\tp.podSyncer.SyncPod()\n\tcase b:\n\t\tp.podSyncer.SyncTerminatingRuntimePod()\n\tdefault:\n\t\tp.other.SyncPod()\n"))
		got, err := src.callees("func (p *podWorkers) loop", "p.podSyncer")
		require.NoError(t, err)
		assert.Equal(t, []string{"SyncPod", "SyncTerminatingRuntimePod"}, got)
		_, err = src.callees("func (p *podWorkers) gone", "p.podSyncer")
		assert.ErrorContains(t, err, "not declared")
	})

	t.Run("referrers", func(t *testing.T) {
		src := write("r1.go", "package kubelet\n\nfunc (kl *Kubelet) Run() {\n\tgo wait.Until(kl.up, 5)\n}\n\nfunc (kl *Kubelet) fast() {\n\tkl.up()\n}\n\nfunc (kl *Kubelet) other() {\n\tkl.down()\n}\n")
		assert.Equal(t, []string{"func (kl *Kubelet) Run", "func (kl *Kubelet) fast"}, src.referrers("kl.up"))
	})

	update := func(body string) string {
		return "package kubelet\n\nfunc (p *podWorkers) UpdatePod() {\n" + body + "}\n"
	}
	t.Run("in order, unconditional, excerpt", func(t *testing.T) {
		src := write("u1.go", update("\tch := make(chan struct{}, 1)\n\tgo func() {\n\t\tloop(ch)\n\t}()\n\tselect {\n\tcase ch <- struct{}{}:\n\tdefault:\n\t}\n"))
		assert.NoError(t, src.inOrder("func (p *podWorkers) UpdatePod", "make(chan struct{}, 1)", "go func() {", "case ch <- struct{}{}:", "default:"))
		assert.ErrorContains(t, src.inOrder("func (p *podWorkers) UpdatePod", "case ch <- struct{}{}:", "go func() {"), "is not after")
		assert.NoError(t, src.unconditional("func (p *podWorkers) UpdatePod", "ch := make(chan struct{}, 1)"))
		assert.ErrorContains(t, src.unconditional("func (p *podWorkers) UpdatePod", "loop(ch)"), "runs under a condition")
		assert.NoError(t, src.excerpt("func (p *podWorkers) UpdatePod", "select {\ncase ch <- struct{}{}: // wakes the worker\ndefault:\n}"))
		assert.ErrorContains(t, src.excerpt("func (p *podWorkers) UpdatePod", "select {\ncase ch <- nil:\n}"), "is not in it")

		src = write("u2.go", update("\tch := make(chan struct{}, 1)\n\tselect {\n\tcase ch <- struct{}{}:\n\tdefault:\n\t}\n\tif ch != nil {\n\t\tgo func() {\n\t\t\tloop(ch)\n\t\t}()\n\t}\n"))
		assert.ErrorContains(t, src.inOrder("func (p *podWorkers) UpdatePod", "make(chan struct{}, 1)", "go func() {", "case ch <- struct{}{}:"), "is not after")
	})

	t.Run("note phrases", func(t *testing.T) {
		c := claim{name: "x", says: map[string][]string{"n.md": {"only for a stopped container"}}, denies: map[string][]string{"n.md": {"each event"}}}
		read := func(text string) func(string) (string, error) {
			return func(string) (string, error) { return text, nil }
		}
		assert.Empty(t, notePhrases(c, read("It relists only for a\nstopped container.")), "a phrase may wrap")
		assert.NotEmpty(t, notePhrases(c, read("It relists for each event.")), "the fix reverted")
		assert.NotEmpty(t, notePhrases(c, read("It relists only for a stopped container, not for each event.")), "the old sentence kept beside the new one")
	})
}
