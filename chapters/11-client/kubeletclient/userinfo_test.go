package kubeletclient_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

// User info in a kubelet URL is never shown, however the URL is written: net/url quotes an
// unparsable URL whole in its error, and reads "user:password@host" as the scheme "user".
func TestUserInfoNeverShown(t *testing.T) {
	tests := []struct {
		name, url, want string
	}{
		{"well formed", "https://admin:s3cret@127.0.0.1:10250", "https://xxxxx@127.0.0.1:10250"},
		{"no scheme", "admin:s3cret@127.0.0.1:10250", "xxxxx@127.0.0.1:10250"},
		{"a slash in the password", "https://admin:s3c/ret@127.0.0.1:10250", "https://xxxxx@127.0.0.1:10250"},
		{"a # in the password", "https://admin:s3c#ret@127.0.0.1:10250", "https://xxxxx@127.0.0.1:10250"},
		{"a quote in the password", `https://admin:s3c"ret@127.0.0.1:10250`, "https://xxxxx@127.0.0.1:10250"},
		{"a space in the password", "https://admin:s3c ret@127.0.0.1:10250", "https://xxxxx@127.0.0.1:10250"},
		{"a bad escape in the password", "https://admin:s3c%zzret@127.0.0.1:10250", "https://xxxxx@127.0.0.1:10250"},
		{"an @ in the path only", "https://127.0.0.1:10250/a@b", "https://127.0.0.1:10250/a@b"},
	}
	client, err := kubeletclient.New(nil, kubeletclient.Options{Auth: kubeletclient.AuthNone, ServiceAccountDir: t.TempDir()})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, kubeletclient.RedactURL(tt.url))
			if tt.want == tt.url {
				return
			}
			r := client.FetchURL(context.Background(), tt.url)
			require.Error(t, r.Err)
			assert.NotContains(t, r.URL, "s3c")
			assert.NotContains(t, r.Err.Error(), "s3c")
			assert.NotContains(t, r.Err.Error(), "admin")
		})
	}
}
