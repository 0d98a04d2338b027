// Package reviewserver answers the two questions a kubelet with webhook authentication and
// authorization asks the apiserver — TokenReview ("who holds this token?") and
// SubjectAccessReview ("may this user do this?") — from tables, over HTTPS on loopback, to the
// holder of its own random bearer token only (Client): a kubelet's authorizer, not any local user.
//
// It stands in for an apiserver in tests of the real kubelet's app.BuildAuth, where client-go's
// fake clientset cannot help (its RESTClient is nil). The mini-cluster chapter asks a real
// apiserver instead.
package reviewserver

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Server is a running review server.
type Server struct {
	// Users maps bearer tokens to the users they authenticate.
	Users map[string]authenticationv1.UserInfo
	// Allow lists what each user may do, as "verb resource/subresource" ("get nodes/pods").
	Allow map[string][]string

	srv   *httptest.Server
	token string
	mu    sync.Mutex
	// Asked records every SubjectAccessReview, in order.
	asked []authorizationv1.ResourceAttributes
}

// Start starts a server on a loopback port; Close stops it.
func Start(users map[string]authenticationv1.UserInfo, allow map[string][]string) *Server {
	s := &Server{Users: users, Allow: allow, token: rand.Text()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", s.tokenReview)
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", s.subjectAccessReview)
	s.srv = httptest.NewTLSServer(s.authenticated(mux))
	return s
}

// authenticated answers 401 to a request without the server's token.
func (s *Server) authenticated(next http.Handler) http.Handler {
	want := []byte("Bearer " + s.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// URL is the server's address, https://127.0.0.1:port.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Client is a clientset that reaches the server, for app.BuildAuth.
func (s *Server) Client() (clientset.Interface, error) {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return clientset.NewForConfig(&rest.Config{Host: s.srv.URL, BearerToken: s.token, TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}}) // the server speaks JSON only
}

// Asked returns the authorization questions asked so far, as "verb resource/subresource".
func (s *Server) Asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, a := range s.asked {
		out = append(out, a.Verb+" "+a.Resource+"/"+a.Subresource)
	}
	return out
}

func (s *Server) tokenReview(w http.ResponseWriter, r *http.Request) {
	var review authenticationv1.TokenReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	user, ok := s.Users[review.Spec.Token]
	review.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, User: user}
	if !ok {
		review.Status.Error = "invalid token"
	}
	review.TypeMeta = metav1.TypeMeta{Kind: "TokenReview", APIVersion: "authentication.k8s.io/v1"}
	reply(w, &review)
}

func (s *Server) subjectAccessReview(w http.ResponseWriter, r *http.Request) {
	var review authorizationv1.SubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	allowed := false
	if a := review.Spec.ResourceAttributes; a != nil {
		s.mu.Lock()
		s.asked = append(s.asked, *a)
		s.mu.Unlock()
		allowed = slices.Contains(s.Allow[review.Spec.User], a.Verb+" "+a.Resource+"/"+a.Subresource)
	}
	review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed}
	if !allowed {
		review.Status.Reason = "not in the review server's table"
	}
	review.TypeMeta = metav1.TypeMeta{Kind: "SubjectAccessReview", APIVersion: "authorization.k8s.io/v1"}
	reply(w, &review)
}

func reply(w http.ResponseWriter, obj any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
}
