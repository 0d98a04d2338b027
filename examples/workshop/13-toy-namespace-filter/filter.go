// Package toyfilter is workshop exercise 13: /pods?namespace=NS on a toy kubelet's read-only
// server. Handler works; FilterPods is yours to write. Run `make check EX=13` until it passes.
// (A reference solution is in ../solutions — look only when you are done.)
package toyfilter

import (
	"encoding/json"
	"net/http"
	"net/url"

	v1 "k8s.io/api/core/v1"
)

// FilterPods returns the pods the query asks for: all of them without a namespace parameter,
// else those of that namespace. A namespace that is not a valid namespace name is an error.
func FilterPods(pods []*v1.Pod, query url.Values) ([]*v1.Pod, error) {
	// Exercise 13: write this.
	_ = query
	return pods, nil
}

// Handler serves GET /pods from list, filtered by FilterPods: 400 for a bad query.
func Handler(list func() []*v1.Pod) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pods, err := FilterPods(list(), r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := v1.PodList{}
		out.Kind, out.APIVersion = "PodList", "v1"
		for _, p := range pods {
			out.Items = append(out.Items, *p)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}
