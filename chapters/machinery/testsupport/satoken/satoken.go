// Package satoken asks the TokenRequest API for a ServiceAccount's token, as the kubelet does for
// the token it projects into a pod: for tests that present one to a kubelet.
package satoken

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Token is a token of the ServiceAccount namespace/name, asked for again for up to 30 seconds:
// the ServiceAccount may be seconds old.
func Token(t testing.TB, client kubernetes.Interface, namespace, name string) string {
	t.Helper()
	var token string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if assert.NoError(c, err, "a token for %s/%s", namespace, name) {
			token = tr.Status.Token
		}
	}, 30*time.Second, 100*time.Millisecond)
	return token
}

// File is Token in a file of its own (mode 0600) in a temporary directory, for --token-file.
func File(t testing.TB, client kubernetes.Interface, namespace, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), namespace+"-"+name+".token")
	require.NoError(t, os.WriteFile(path, []byte(Token(t, client, namespace, name)), 0o600))
	return path
}
