package toyfilter

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaceFilter(t *testing.T) {
	if os.Getenv("WORKSHOP_EXERCISE") == "" {
		t.Skip("workshop exercise 13: `make check EX=13` runs this test against your code")
	}
	pods := []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-node"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-node"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-apiserver-node"}},
	}
	srv := httptest.NewServer(Handler(func() []*v1.Pod { return pods }))
	defer srv.Close()
	tests := []struct {
		query string
		code  int
		names []string
	}{
		{"", http.StatusOK, []string{"web-node", "etcd-node", "kube-apiserver-node"}},
		{"?namespace=kube-system", http.StatusOK, []string{"etcd-node", "kube-apiserver-node"}},
		{"?namespace=default", http.StatusOK, []string{"web-node"}},
		{"?namespace=nothing-here", http.StatusOK, nil},
		{"?namespace=Not_A_Namespace", http.StatusBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, err := http.Get(srv.URL + "/pods" + tt.query)
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			require.Equal(t, tt.code, resp.StatusCode, "GET /pods%s answers %d", tt.query, tt.code)
			if tt.code != http.StatusOK {
				return
			}
			var list v1.PodList
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
			var names []string
			for _, p := range list.Items {
				names = append(names, p.Name)
			}
			assert.Equal(t, tt.names, names, "GET /pods%s lists only that namespace's pods", tt.query)
		})
	}
}
