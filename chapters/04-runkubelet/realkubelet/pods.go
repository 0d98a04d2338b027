package realkubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
)

// PodsAt asks a kubelet's /pods (at baseURL: its read-only server, or any server answering the
// same way, as chapter 05's toy does) what pods it runs.
func PodsAt(ctx context.Context, baseURL string) ([]v1.Pod, error) {
	body, err := get(ctx, http.DefaultClient, baseURL+"/pods")
	if err != nil {
		return nil, err
	}
	var list v1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode /pods: %w", err)
	}
	return list.Items, nil
}

// Pods asks the kubelet's read-only /pods what pods it runs.
func (k *Kubelet) Pods(ctx context.Context) ([]v1.Pod, error) {
	if k.ReadOnlyURL == "" {
		return nil, errors.New("the read-only server is disabled")
	}
	return PodsAt(ctx, k.ReadOnlyURL)
}

// AllRunning says whether there is a pod and every pod is Running.
func AllRunning(pods []v1.Pod) bool {
	for _, p := range pods {
		if p.Status.Phase != v1.PodRunning {
			return false
		}
	}
	return len(pods) > 0
}

// WaitRunning asks /pods until there is a pod and every pod is Running, or until wait has
// passed, and returns what the kubelet serves then.
func (k *Kubelet) WaitRunning(ctx context.Context, wait time.Duration) ([]v1.Pod, error) {
	deadline := time.Now().Add(wait)
	for {
		pods, err := k.Pods(ctx)
		if err != nil {
			return nil, err
		}
		if AllRunning(pods) || time.Now().After(deadline) {
			return pods, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("interrupted before the pods were running")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
