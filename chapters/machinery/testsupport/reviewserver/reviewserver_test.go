package reviewserver

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The server answers its own client, and no one else on this machine: HTTPS, and a token only
// Client holds.
func TestOnlyItsClient(t *testing.T) {
	s := Start(map[string]authenticationv1.UserInfo{"secret-token": {Username: "reader"}}, nil)
	t.Cleanup(s.Close)
	require.True(t, strings.HasPrefix(s.URL(), "https://127.0.0.1:"), s.URL())

	client, err := s.Client()
	require.NoError(t, err)
	review, err := client.AuthenticationV1().TokenReviews().Create(context.Background(),
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "secret-token"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "reader", review.Status.User.Username)

	anyone := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a local user who skips verification
	tests := []struct {
		name          string
		authorization string
	}{
		{"no token", ""},
		{"another token", "Bearer not-the-servers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, s.URL()+"/apis/authentication.k8s.io/v1/tokenreviews",
				strings.NewReader(`{"spec":{"token":"secret-token"}}`))
			require.NoError(t, err)
			if tt.authorization != "" {
				req.Header.Set("Authorization", tt.authorization)
			}
			resp, err := anyone.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		})
	}
}
