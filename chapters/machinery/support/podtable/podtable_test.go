package podtable

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func pod(ns, name string, phase v1.PodPhase, created time.Time, annotations map[string]string) v1.Pod {
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created), Annotations: annotations},
		Status:     v1.PodStatus{Phase: phase},
	}
}

func ExamplePrint() {
	pods := []v1.Pod{
		pod("kube-system", "etcd-minikube", v1.PodRunning, now.Add(-90*time.Second), map[string]string{v1.MirrorPodAnnotationKey: "abc"}),
		pod("default", "web-minikube", v1.PodPending, now.Add(-3*time.Hour), map[string]string{"kubernetes.io/config.source": "file"}),
	}
	_ = Print(os.Stdout, Rows("minikube", pods), Node, Namespace, Name, Status, Source, Age(func() time.Time { return now }))
	// Output:
	// NODE       NAMESPACE     NAME            STATUS    SOURCE   AGE
	// minikube   default       web-minikube    Pending   file     3h
	// minikube   kube-system   etcd-minikube   Running   mirror   90s
}

func TestPodAge(t *testing.T) {
	started := metav1.NewTime(now.Add(-5 * time.Minute))
	tests := []struct {
		name string
		pod  v1.Pod
		want string
	}{
		{"creationTimestamp", v1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-2 * 24 * time.Hour))}}, "2d"},
		{"static pod: startTime", v1.Pod{Status: v1.PodStatus{StartTime: &started}}, "5m"},
		{"neither", v1.Pod{}, "<unknown>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, PodAge(&tt.pod, now))
		})
	}
}

func TestSource(t *testing.T) {
	assert.Equal(t, "mirror", PodSource(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1.MirrorPodAnnotationKey: "x"}}}))
	assert.Equal(t, "file", PodSource(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/config.source": "file"}}}))
	assert.Equal(t, "api", PodSource(&v1.Pod{}))
}

func TestPrintSortsAndDoesNotReorderInput(t *testing.T) {
	pods := []v1.Pod{pod("b", "x", v1.PodRunning, now, nil), pod("a", "y", v1.PodRunning, now, nil), pod("a", "x", v1.PodRunning, now, nil)}
	rows := Rows("n", pods)
	var buf bytes.Buffer
	require.NoError(t, Print(&buf, rows, Namespace, Name))
	assert.Equal(t, "NAMESPACE   NAME\na           x\na           y\nb           x\n", buf.String())
	assert.Equal(t, "b", rows[0].Pod.Namespace, "Print sorts a copy")
}
