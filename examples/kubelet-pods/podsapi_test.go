package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/syncbuf"
)

func runningPod(name, uid string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + uid)}, Spec: corev1.PodSpec{NodeName: "n1"}}
	p.Spec.Containers = []corev1.Container{{Name: "main", Image: "x"}}
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return p
}

// --via=podsapi: the table from the socket, without a kubeconfig, a token or a request to
// anyone; --via=auto on its own node (--own-node, $NODE_NAME in the DaemonSet): the socket,
// said; on another node, or without the socket: HTTPS, and why.
func TestPodsAPIPath(t *testing.T) {
	e := newEnv(t, runningPod("over-https", "h"))
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	api := fakecluster.NewPodsAPI(t, fakecluster.SocketIn(fakecluster.PodsAPIDir(t)), runningPod("over-the-socket", "s"))
	absent := fakecluster.SocketIn(fakecluster.PodsAPIDir(t))
	tests := []struct {
		name          string
		args          []string
		want, wantErr string
		note          string // on stderr
		toKubelet     bool   // the HTTPS kubelet was asked
	}{
		{name: "--via=podsapi, no kubeconfig", args: []string{"--node", "n1", "--via=podsapi", "--pods-api-socket", api.Socket},
			want: "n1     default     over-the-socket   1/1     Running   0          api\n"},
		{name: "-o wide says the way", args: []string{"--node", "n1", "--via=podsapi", "--pods-api-socket", api.Socket, "-o", "wide"},
			want: "podsapi"},
		{name: "auto on its own node", args: []string{"--kubeconfig", kc, "--node", "n1", "--own-node", "n1", "--pods-api-socket", api.Socket},
			want: "over-the-socket", note: "note: n1 is the node this runs on (--own-node): its pods come from the kubelet's Pods API socket, " + api.Socket},
		{name: "auto on another node", args: []string{"--kubeconfig", kc, "--node", "n1", "--own-node", "n2", "--pods-api-socket", api.Socket},
			want: "over-https", toKubelet: true},
		{name: "auto on its own node, no socket", args: []string{"--kubeconfig", kc, "--node", "n1", "--own-node", "n1", "--pods-api-socket", absent},
			want: "over-https", toKubelet: true, note: "note: n1 is the node this runs on (--own-node), but its Pods API socket was not used: the Pods API socket " + absent + ": no socket in"},
		{name: "--via=podsapi, no socket", args: []string{"--node", "n1", "--via=podsapi", "--pods-api-socket", absent},
			wantErr: "its PodsAPI feature gate is off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.kubelet.Reset()
			e.apiserver.Reset()
			stdout, stderr, err := e.run(t, tt.args...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err, stderr)
			assert.Contains(t, stdout, tt.want)
			if tt.note == "" {
				assert.Empty(t, stderr)
			} else {
				assert.Contains(t, stderr, tt.note)
			}
			assert.Equal(t, tt.toKubelet, len(e.kubelet.Requests()) > 0, "the kubelet over HTTPS asked")
			if !tt.toKubelet {
				assert.Empty(t, e.apiserver.Requests(), "the socket needs no apiserver")
			}
		})
	}
}

// The Pods API's flags where they would be ignored, or where the socket cannot serve.
func TestPodsAPIFlags(t *testing.T) {
	e := newEnv(t)
	kc := e.apiserver.Kubeconfig(t, e.pki, fakecluster.User{Token: kubeconfigToken})
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--node", "n1", "--via=podsapi", "--kubeconfig", kc}, "--kubeconfig would have no effect here: --via=podsapi reads the kubelet's socket"},
		{[]string{"--node", "n1", "--via=podsapi", "--token-file", fakecluster.TokenFile(t, fileToken)}, "--token-file would have no effect here"},
		{[]string{"--node", "n1", "--via=podsapi", "--kubelet-ca-file", e.pki.CAFile}, "--kubelet-ca-file would have no effect here"},
		{[]string{"--node", "n1", "--via=podsapi", "--watch", "--interval", "5s"}, "--interval would have no effect here: --watch on the Pods API streams each change"},
		{[]string{"--node", "n1", "--via=kubelet", "--pods-api-socket", "/x.sock"}, "--pods-api-socket would have no effect here"},
		{[]string{"--node", "n1", "--via=apiserver", "--own-node", "n1"}, "--own-node would have no effect here"},
		{[]string{"--all-nodes", "--pods-api-socket", "/x.sock"}, "--pods-api-socket would have no effect here"},
		{[]string{"--all-nodes", "--via=podsapi"}, "--via=podsapi reads the node this runs on, through its kubelet's socket: give --node NAME"},
		{[]string{"--kubelet-url", e.kubelet.URL, "--via=podsapi"}, "--via=podsapi reads the node this runs on"},
		{[]string{"doctor", "--node", "n1", "--via=podsapi"}, "--via=podsapi reads the node this runs on"},
		{[]string{"--node", "n1", "--via=podsapi", "--endpoint", "stats/summary"}, "--endpoint=stats/summary: the Pods API serves pods only"},
		{[]string{"--node", "n1", "--via", "socket"}, `unknown --via "socket": use podsapi, kubelet, apiserver or auto`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := e.run(t, tt.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Empty(t, e.kubelet.Requests())
		})
	}
}

// --watch on the Pods API: no poll, the kubelet's stream, printed as a poll's changes; a broken
// stream said, watched again, and what went meanwhile removed.
func TestWatchPodsAPI(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	web, db := runningPod("web", "w"), runningPod("db", "d")
	api := fakecluster.NewPodsAPI(t, fakecluster.SocketIn(fakecluster.PodsAPIDir(t)), web)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o := &clientOptions{now: func() time.Time { return testNow }}
	cmd := newClientCommand(ctx, o)
	var out, errOut syncbuf.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--node", "n1", "--via=podsapi", "--pods-api-socket", api.Socket, "--watch"})
	done := make(chan error)
	go func() { done <- cmd.Execute() }()
	waitFor := func(line string) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Contains(out.String()+errOut.String(), line) }, 10*time.Second, 10*time.Millisecond,
			"waiting for %q in:\n%s\n%s", line, &out, &errOut)
	}

	waitFor("Watching n1's pods through its kubelet's Pods API socket, " + api.Socket + " (WatchPods), until Ctrl-C.\n")
	waitFor("ADD    n1 default/web 1/1 Running 0\n")
	require.NoError(t, api.Send(podsv1alpha1.EventType_ADDED, db))
	waitFor("ADD    n1 default/db 1/1 Running 0\n")
	crashing := crashLooping()
	crashing.Name, crashing.UID, crashing.Spec.NodeName = "web", web.UID, "n1"
	require.NoError(t, api.Send(podsv1alpha1.EventType_MODIFIED, crashing))
	waitFor("UPDATE n1 default/web READY 1/1 → 0/1, STATUS Running → CrashLoopBackOff, RESTARTS 0 → 7, IP <none> → 10.0.0.7\n")
	require.NoError(t, api.Send(podsv1alpha1.EventType_MODIFIED, crashing)) // a change no column shows: nothing printed

	api.SetPods(crashing) // db went while the stream was broken
	api.Break(status.Error(codes.ResourceExhausted, "watch client channel closed"))
	waitFor("error: the Pods API socket " + api.Socket + ": ResourceExhausted: watch client channel closed")
	waitFor("REMOVE n1 default/db\n")
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, 4, strings.Count(out.String(), "\n"), "one line per change:\n%s", out.String())
	assert.Equal(t, []string{"WatchPods", "WatchPods"}, api.Calls(), "no ListPods: no poll")
}
