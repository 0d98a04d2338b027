package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/fakecluster"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// repoRoot is where the hints' paths ("examples/rbac/") start.
var repoRoot = repo.Root()

// rbac is what a set of applied files and kubectl commands grants: ClusterRoles and who they
// are bound to. Only what the hints use is modelled: cluster-wide rules on the core group.
type rbac struct {
	roles    map[string][]rbacv1.PolicyRule
	bindings []rbacv1.ClusterRoleBinding
}

func newRBAC() *rbac { return &rbac{roles: map[string][]rbacv1.PolicyRule{}} }

// apply is `kubectl apply -f DIR`: the ClusterRoles and ClusterRoleBindings of the YAML files
// directly in DIR (kubectl apply does not recurse without -R). Other kinds grant nothing.
func (r *rbac) apply(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "kubectl apply -f %s: no YAML there", dir)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(data, &meta), file)
		switch meta.Kind {
		case "ClusterRole":
			var role rbacv1.ClusterRole
			require.NoError(t, yaml.UnmarshalStrict(data, &role), file)
			r.roles[role.Name] = append(r.roles[role.Name], role.Rules...)
		case "ClusterRoleBinding":
			var binding rbacv1.ClusterRoleBinding
			require.NoError(t, yaml.UnmarshalStrict(data, &binding), file)
			r.bindings = append(r.bindings, binding)
		}
	}
}

// roleGrants says whether a ClusterRole's rules allow verb on resource ("nodes/configz").
func (r *rbac) roleGrants(role, verb, resource string) bool {
	for _, rule := range r.roles[role] {
		if len(rule.ResourceNames) == 0 && slices.Contains(rule.APIGroups, "") &&
			(slices.Contains(rule.Resources, resource) || slices.Contains(rule.Resources, "*")) &&
			(slices.Contains(rule.Verbs, verb) || slices.Contains(rule.Verbs, "*")) {
			return true
		}
	}
	return false
}

// allows says whether user may verb resource, as RBAC would answer the kubelet's
// SubjectAccessReview.
func (r *rbac) allows(user, verb, resource string) bool {
	for _, b := range r.bindings {
		for _, s := range b.Subjects {
			name := s.Name
			if s.Kind == rbacv1.ServiceAccountKind {
				name = "system:serviceaccount:" + s.Namespace + ":" + s.Name
			}
			if name == user && b.RoleRef.Kind == "ClusterRole" && r.roleGrants(b.RoleRef.Name, verb, resource) {
				return true
			}
		}
	}
	return false
}

// The kubectl commands a hint may give. A command ends at whitespace; a trailing "," or "."
// is the sentence's.
var (
	applyCommand   = regexp.MustCompile(`kubectl apply -f (\S+)`)
	roleCommand    = regexp.MustCompile(`kubectl create clusterrole (\S+) --verb=(\S+) --resource=(\S+)`)
	bindingCommand = regexp.MustCompile(`kubectl create clusterrolebinding (\S+) --clusterrole=(\S+) --(serviceaccount|user)=(\S+)`)
)

func trimSentence(s string) string { return strings.TrimRight(s, ",.;") }

// follow does what a hint says, in the order it says it, on an empty cluster: it applies the
// directories it names (from the repository's root) and runs its kubectl create commands.
// It returns the directories applied.
func (r *rbac) follow(t *testing.T, hint string) []string {
	t.Helper()
	var dirs []string
	for _, m := range applyCommand.FindAllStringSubmatch(hint, -1) {
		dir := trimSentence(m[1])
		r.apply(t, dir)
		dirs = append(dirs, dir)
	}
	for _, m := range roleCommand.FindAllStringSubmatch(hint, -1) {
		// The core group: --resource=nodes/configz names no other.
		r.roles[m[1]] = append(r.roles[m[1]], rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{trimSentence(m[3])}, Verbs: strings.Split(m[2], ",")})
	}
	for _, m := range bindingCommand.FindAllStringSubmatch(hint, -1) {
		subject := rbacv1.Subject{Kind: rbacv1.UserKind, Name: trimSentence(m[4])}
		if m[3] == "serviceaccount" {
			ns, name, ok := strings.Cut(subject.Name, ":")
			require.True(t, ok, "--serviceaccount=NAMESPACE:NAME: %s", m[0])
			subject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
		}
		r.bindings = append(r.bindings, rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: m[1]},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: m[2]}, Subjects: []rbacv1.Subject{subject}})
	}
	return dirs
}

// The subresources a v1.37 kubelet asks the apiserver about for each read endpoint, in order:
// its own first, then nodes/proxy — except stats and metrics, which have no fallback
// (pkg/kubelet/server/auth.go#L83-L157 (func (n nodeAuthorizerAttributesGetter) GetRequestAttributes);
// notes/kubelet-routes.md lists them all).
var askedByKubelet = map[string][]string{
	"pods":             {"pods", "proxy"},
	"runningpods":      {"pods", "proxy"},
	"healthz":          {"healthz", "proxy"},
	"configz":          {"configz", "proxy"},
	"stats/summary":    {"stats"},
	"metrics/resource": {"metrics"},
}

// TestForbiddenHintsGrantWhatTheySay: for every read endpoint and every kind of identity, the
// hint after the kubelet's 403, followed to the letter against examples/rbac's real files,
// grants the permission it names — and every directory it says to apply grants it by itself.
// Before, /configz's 403 said "kubectl apply -f examples/rbac/", which grants nodes/pods only.
func TestForbiddenHintsGrantWhatTheySay(t *testing.T) {
	require.Len(t, askedByKubelet, len(kubeletclient.ReadEndpoints), "a kubelet answer for each read endpoint")
	p := fakecluster.NewPKI(t)
	k := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: p.ServingConfig(t, "127.0.0.1")})
	c, err := kubeletclient.New(nil, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: fakecluster.TokenFile(t, "t"),
		KubeletCAFile: p.CAFile, ServiceAccountDir: t.TempDir()})
	require.NoError(t, err)

	users := []string{
		"system:serviceaccount:kubelet-reader:kubelet-reader", // examples/rbac's own
		"system:serviceaccount:monitoring:agent",              // another ServiceAccount
		"alice@example.com",                                   // a user
	}
	type answer struct {
		name, endpoint string
		asked          []string // the kubelet's subresource(s); nil: a 403 without the kubelet's words
	}
	var answers []answer
	var names []string
	for name := range kubeletclient.ReadEndpoints {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		answers = append(answers, answer{name + " (v1.37)", name, askedByKubelet[name]})
	}
	answers = append(answers,
		answer{"pods (a kubelet before v1.33: nodes/proxy alone)", "pods", []string{"proxy"}},
		answer{"configz (no words: a proxy in front of the kubelet)", "configz", nil})

	for _, a := range answers {
		for _, user := range users {
			t.Run(a.name+"/"+user, func(t *testing.T) {
				ep := kubeletclient.ReadEndpoints[a.endpoint]
				body := "Forbidden"
				if a.asked != nil {
					body = fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[%s])\n", user, strings.Join(a.asked, " "))
				}
				k.Answer(http.StatusForbidden, body, 0, nil)
				r := c.GetURL(context.Background(), k.URL, ep)
				var e *agent.Error
				require.ErrorAs(t, agent.Explain(context.Background(), c, r.Err), &e)
				require.Equal(t, agent.Forbidden, e.Kind)

				// What the hint asks to grant: the first permission the kubelet asked for.
				want := ep.Permission
				if a.asked != nil {
					want = "get nodes/" + a.asked[0]
				}
				verb, resource, _ := strings.Cut(want, " ")
				assert.Contains(t, e.Hint, "Grant "+want)
				if a.asked != nil && len(a.asked) > 1 {
					assert.Equal(t, ep.Permission, want, "v1.37 asks for the endpoint's own permission first")
				}

				cluster := newRBAC()
				dirs := cluster.follow(t, e.Hint)
				for _, dir := range dirs {
					alone := newRBAC()
					alone.apply(t, dir)
					granted := false
					for role := range alone.roles {
						granted = granted || alone.roleGrants(role, verb, resource)
					}
					assert.True(t, granted, "the hint points at %s, which does not grant %s:\n%s", dir, want, e.Hint)
				}
				if a.asked != nil {
					assert.True(t, cluster.allows(user, verb, resource), "following the hint does not let %s %s:\n%s", user, want, e.Hint)
				} else {
					// The user is unknown: the hint cannot bind, but what it creates or applies grants it.
					granted := false
					for role := range cluster.roles {
						granted = granted || cluster.roleGrants(role, verb, resource)
					}
					assert.True(t, granted, "following the hint creates no role that grants %s:\n%s", want, e.Hint)
				}
				if resource == "nodes/proxy" {
					assert.Contains(t, e.Hint, "exec-equivalent", "nodes/proxy opens exec: the hint must say so")
				} else {
					assert.NotContains(t, e.Hint, "node-proxy", "no reason to point at nodes/proxy for %s", want)
				}
			})
		}
	}
}

// The apiserver's own 403 on the node proxy: the hint follows the same rule, for the user the
// apiserver names — the kubeconfig's, not examples/rbac's ServiceAccount.
func TestProxyForbiddenHintGrantsTheUser(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	a.SetNodes(fakecluster.Node("n1", 1))
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}, BearerToken: "alice"}
	for _, user := range []string{"system:serviceaccount:kubelet-reader:kubelet-reader", "alice@example.com"} {
		t.Run(user, func(t *testing.T) {
			a.Proxy(func(w http.ResponseWriter, _ *http.Request) {
				fakecluster.WriteStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
					`nodes "n1" is forbidden: User "`+user+`" cannot get resource "nodes/proxy" in API group "" at the cluster scope`)
			})
			c, err := kubeletclient.New(cfg, kubeletclient.Options{Via: kubeletclient.ViaAPIServer, ServiceAccountDir: t.TempDir()})
			require.NoError(t, err)
			r := c.Pods(context.Background(), "n1")
			var e *agent.Error
			require.ErrorAs(t, agent.Explain(context.Background(), c, r.Err), &e)
			cluster := newRBAC()
			cluster.follow(t, e.Hint)
			assert.True(t, cluster.allows(user, "get", "nodes/proxy"), "following the hint does not let %s get nodes/proxy:\n%s", user, e.Hint)
			assert.Contains(t, e.Hint, "exec-equivalent")
		})
	}
}

// TestExampleRolesAreTheFiles: the table the hints read is examples/rbac as it is — each
// directory's ClusterRole, its rules, and the ServiceAccount its binding names.
func TestExampleRolesAreTheFiles(t *testing.T) {
	var fromFiles []agent.ExampleRole
	err := filepath.WalkDir(filepath.Join(repoRoot, "examples", "rbac"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		dir, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		r := newRBAC()
		r.apply(t, dir)
		for name, rules := range r.roles {
			role := agent.ExampleRole{Dir: filepath.ToSlash(dir) + "/", ClusterRole: name}
			for _, rule := range rules {
				for _, verb := range rule.Verbs {
					for _, resource := range rule.Resources {
						role.Grants = append(role.Grants, verb+" "+resource)
					}
				}
			}
			for _, b := range r.bindings {
				if b.RoleRef.Name == name {
					for _, s := range b.Subjects {
						require.Equal(t, rbacv1.ServiceAccountKind, s.Kind, "%s binds a ServiceAccount", dir)
						role.ServiceAccount = s.Namespace + "/" + s.Name
					}
				}
			}
			fromFiles = append(fromFiles, role)
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, fromFiles, 2, "examples/rbac and examples/rbac/node-proxy")
	assert.ElementsMatch(t, fromFiles, agent.ExampleRoles, "update agent.ExampleRoles (rbac.go) to what the files grant")
}

// A kubelet with serverTLSBootstrap and no approved CSR has no certificate and ends every
// handshake with the alert internal_error. The fetch error and doctor name the node's pending
// kubelet-serving CSR and the command that approves it — and a port that does not speak TLS at
// all is told apart. Before, doctor said "the port does not speak TLS (a read-only port,
// 10255?)" and looked up no CSR.
func TestHandshakeRefusedNamesThePendingCSR(t *testing.T) {
	p := fakecluster.NewPKI(t)
	a := fakecluster.NewAPIServer(t, p)
	noCert := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{TLS: fakecluster.NoServingCertificate()})
	plain := fakecluster.NewKubelet(t, fakecluster.KubeletOptions{}) // a read-only port
	a.SetNodes(fakecluster.Node("n1", noCert.Port), fakecluster.Node("n2", plain.Port))
	csr := func(name, signer, node string, conditions ...certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequest {
		c := certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Username: "system:node:" + node}}
		for _, cond := range conditions {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: cond, Status: "True"})
		}
		return c
	}
	serving, client := certificatesv1.KubeletServingSignerName, certificatesv1.KubeAPIServerClientKubeletSignerName
	approved := csr("csr-approved", serving, "n1", certificatesv1.CertificateApproved)
	others := []certificatesv1.CertificateSigningRequest{approved,
		csr("csr-denied", serving, "n1", certificatesv1.CertificateDenied),
		csr("csr-other-node", serving, "n2"),
		csr("csr-client-cert", client, "n1")}
	cfg := &rest.Config{Host: a.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile}, BearerToken: "admin"}
	newClient := func(t *testing.T, apiserver *rest.Config) *kubeletclient.Client {
		c, err := kubeletclient.New(apiserver, kubeletclient.Options{Auth: kubeletclient.AuthToken, TokenFile: fakecluster.TokenFile(t, "t"),
			KubeletCAFile: p.CAFile, ServiceAccountDir: t.TempDir()})
		require.NoError(t, err)
		return c
	}
	checks := func(t *testing.T, c *kubeletclient.Client, node string) map[string]agent.Check {
		byName := map[string]agent.Check{}
		for _, ch := range agent.Doctor(context.Background(), c, node) {
			byName[ch.Name] = ch
		}
		return byName
	}

	tests := []struct {
		name    string
		csrs    []certificatesv1.CertificateSigningRequest
		wantFix string // in the fetch error's hint and in doctor's fixes
	}{
		{"one pending", append([]certificatesv1.CertificateSigningRequest{csr("csr-pending", serving, "n1")}, others...),
			"kubectl certificate approve csr-pending"},
		{"none pending", others, "No kubernetes.io/kubelet-serving CSR of n1 is pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.SetCSRs(tt.csrs...)
			c := newClient(t, cfg)
			r := c.Pods(context.Background(), "n1")
			var e *agent.Error
			require.ErrorAs(t, agent.Explain(context.Background(), c, r.Err), &e)
			assert.Equal(t, agent.HandshakeRefused, e.Kind)
			assert.False(t, e.Unreachable(), "the kubelet was reached: no failover")
			assert.Equal(t, "kubelet", r.Via)
			assert.Contains(t, e.Error(), "remote error: tls: internal error")
			assert.Contains(t, e.Hint, "no serving certificate")
			assert.Contains(t, e.Hint, tt.wantFix)
			for _, other := range others {
				assert.NotContains(t, e.Hint, other.Name)
			}

			doctor := checks(t, c, "n1")
			assert.Equal(t, agent.Fail, doctor[agent.CheckTLS].Verdict)
			assert.Contains(t, doctor[agent.CheckTLS].Detail, "remote error: tls: internal error")
			assert.Contains(t, doctor[agent.CheckTLS].Fix, tt.wantFix)
			assert.NotContains(t, doctor[agent.CheckTLS].Fix, "does not speak TLS")
			assert.Contains(t, doctor[agent.CheckFetch].Fix, tt.wantFix)
		})
	}

	t.Run("no kubeconfig: what to look for", func(t *testing.T) {
		c := newClient(t, nil)
		r := c.FetchURL(context.Background(), noCert.URL)
		var e *agent.Error
		require.ErrorAs(t, agent.Explain(context.Background(), c, r.Err), &e)
		assert.Equal(t, agent.HandshakeRefused, e.Kind)
		assert.Contains(t, e.Hint, "kubectl get csr --field-selector spec.signerName=kubernetes.io/kubelet-serving")
		assert.Contains(t, e.Hint, "kubectl certificate approve <name>")
	})

	t.Run("a port that does not speak TLS is another matter", func(t *testing.T) {
		a.SetCSRs(csr("csr-pending", serving, "n1"), csr("csr-n2", serving, "n2"))
		c := newClient(t, cfg)
		doctor := checks(t, c, "n2")
		assert.Equal(t, agent.Fail, doctor[agent.CheckTLS].Verdict)
		assert.Contains(t, doctor[agent.CheckTLS].Detail, "first record does not look like a TLS handshake")
		assert.Contains(t, doctor[agent.CheckTLS].Fix, "does not speak TLS")
		assert.NotContains(t, doctor[agent.CheckTLS].Fix, "csr")
		r := c.Pods(context.Background(), "n2")
		var e *agent.Error
		require.ErrorAs(t, agent.Explain(context.Background(), c, r.Err), &e)
		assert.NotEqual(t, agent.HandshakeRefused, e.Kind)
		assert.NotContains(t, e.Hint, "CSR")
	})
}
