package clientnode

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/machinery/testsupport/repo"
	"github.com/kubelet-walkthrough/kubelet-walkthrough/examples/kubelet-pods/agent"
)

// What kubeadm (through minikube's configuration) gives the node.
const (
	nodeName = "minikube"
	nodeIP   = "192.168.49.2"
)

// readmeTLSError is the start of what examples/kubelet-pods/README.md's "On minikube, step by step" shows for the
// first direct call: the IP is not in kubeadm's hostname-only certificate, and the first fix.
const readmeTLSError = `error: certificate not trusted: Get "https://192.168.49.2:10250/pods": tls: failed to verify certificate: x509: cannot validate certificate for 192.168.49.2 because it doesn't contain any IP SANs
  The kubelet's certificate is not valid for 192.168.49.2. Check it against a name it holds (--kubelet-tls-server-name=Hostname), `

// readmeCSR is the CSR name that README shows: each run's kubelet names its own.
const readmeCSR = "csr-7x2kq"

// readmeShowsCSR is readmeShows for text that names this run's CSR.
func readmeShowsCSR(t *testing.T, text, csr string) {
	t.Helper()
	readmeShows(t, strings.ReplaceAll(text, csr, readmeCSR))
}

// readmeShows fails unless the production client's README shows text, so that what it tells a reader is what
// these tests saw.
func readmeShows(t *testing.T, text string) {
	t.Helper()
	readme, err := os.ReadFile(repo.Path("examples", "kubelet-pods", "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), text, "the production client's README should show what the node answered")
}

// Discovery: the Node kubeadm's kubelet registered has the address and port the client dials.
func TestDiscovery(t *testing.T) {
	f := nodeFixture(t)
	var n corev1.Node
	require.NoError(t, json.Unmarshal([]byte(f.kubectl(t, "get", "node", nodeName, "-o", "json")), &n))
	assert.Contains(t, n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: nodeIP}, "the kubelet's --node-ip, from minikube's kubeletExtraArgs")
	assert.Contains(t, n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: nodeName})
	assert.EqualValues(t, 10250, n.Status.DaemonEndpoints.KubeletEndpoint.Port)

	r := f.client(t, "doctor", "--node", nodeName, "-o", "json")
	checks := decodeChecks(t, r)
	assert.Equal(t, agent.Check{Node: nodeName, Name: agent.CheckDiscovery, Verdict: agent.OK,
		Detail: "192.168.49.2:10250 (InternalIP; port from daemonEndpoints)"}, checks[0])
	assert.Equal(t, agent.OK, checks[1].Verdict, "TCP to the kubelet, next to the node: %+v", checks[1])
}

// TLS against kubeadm's kubelet: its certificate is self-signed and names the host only, so the
// cluster CA does not vouch for it and the IP is not in it. The kubelet's own certificate,
// checked against the Node's Hostname while dialing the IP, is trusted; skipping verification
// keeps the credentials back unless the user says otherwise.
func TestTLS(t *testing.T) {
	f := nodeFixture(t)
	f.applyRBAC(t)
	readmeShows(t, readmeTLSError+"…")

	// What the client finds there: kubeadm did not ask for a serving certificate (no
	// serverTLSBootstrap), so the kubelet made its own, for its hostname.
	block, _ := pem.Decode([]byte(f.inNode(t, "cat", "/var/lib/kubelet/pki/kubelet.crt")))
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, []string{nodeName}, cert.DNSNames)
	assert.Empty(t, cert.IPAddresses)

	tests := []struct {
		name           string
		args           []string
		code           int
		stderr, stdout []string
	}{
		{"the cluster CA, the IP: the IP is not in the certificate (Go checks the name first)",
			[]string{"--via=kubelet"}, 1, []string{readmeTLSError}, nil},
		{"the cluster CA, the Hostname: nothing the cluster trusts signed it",
			[]string{"--via=kubelet", "--kubelet-tls-server-name=Hostname"}, 1,
			// The URL dialed, and the name the certificate was checked for: not "https://minikube:10250",
			// which names a host nobody dialed (and that this machine may not resolve).
			[]string{`Get "https://192.168.49.2:10250/pods" (certificate checked for minikube): tls: failed to verify certificate: x509: certificate signed by unknown authority`,
				"The kubelet's certificate is not signed by a CA you trust: on minikube and kubeadm clusters without serverTLSBootstrap, each kubelet signs its own certificate at start"}, nil},
		{"the kubelet's own certificate, the IP: still not a name it holds",
			[]string{"--via=kubelet", "--kubelet-ca-file", f.kubeletCert}, 1, []string{"doesn't contain any IP SANs"}, nil},
		{"the kubelet's own certificate, checked for the Hostname while dialing the IP",
			[]string{"--via=kubelet", "--kubelet-ca-file", f.kubeletCert, "--kubelet-tls-server-name=Hostname", "-v=2"}, 0,
			[]string{`"Fetched" node="minikube" via="kubelet" url="https://192.168.49.2:10250/pods" serverName="minikube" protocol="HTTP/1.1"`},
			[]string{"kube-apiserver-minikube"}},
		{"unverified, with the minted token: refused before anything is sent",
			[]string{"--via=kubelet", "--insecure-skip-tls-verify"}, 1,
			[]string{"warning: --insecure-skip-tls-verify: the kubelet's certificate is not checked",
				"error: refusing to send a 10m0s token of the ServiceAccount kubelet-reader/kubelet-reader (TokenRequest) to a kubelet whose certificate is not checked (--insecure-skip-tls-verify)"}, nil},
		{"unverified and anonymous: kubeadm's kubelet refuses anonymous requests",
			[]string{"--via=kubelet", "--insecure-skip-tls-verify", "--auth=none"}, 1,
			[]string{"error: unauthorized: GET https://192.168.49.2:10250/pods: 401 Unauthorized: Unauthorized",
				"The kubelet did not accept the credentials (none (anonymous)). Anonymous requests are refused (authentication.anonymous.enabled: false)"}, nil},
		{"unverified, the token sent because the user said so",
			[]string{"--via=kubelet", "--insecure-skip-tls-verify", "--allow-credentials-to-unverified-kubelet"}, 0,
			[]string{"warning: --allow-credentials-to-unverified-kubelet: a 10m0s token of the ServiceAccount kubelet-reader/kubelet-reader (TokenRequest) go to whoever answers"},
			[]string{"kube-apiserver-minikube"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.client(t, append([]string{"--node", nodeName}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, "%s", r)
			for _, s := range tt.stderr {
				assert.Contains(t, r.stderr, s)
			}
			for _, s := range tt.stdout {
				assert.Contains(t, r.stdout, s)
			}
		})
	}
}

// The token and RBAC through kubeadm's webhooks: the kubelet asks the apiserver who a token is
// (TokenReview) and whether that identity may (SubjectAccessReview), and the apiserver answers
// from its real RBAC. The minted kubelet-reader token is refused until examples/rbac grants
// nodes/pods — and nodes/proxy stays refused after.
func TestTokenAndRBAC(t *testing.T) {
	f := nodeFixture(t)
	beside := func(args ...string) result {
		return f.client(t, append([]string{"--node", nodeName, "--via=kubelet", "--kubelet-ca-file", f.kubeletCert, "--kubelet-tls-server-name=Hostname"}, args...)...)
	}

	// The ServiceAccount, without its role: a token can be minted, and the kubelet refuses it.
	f.kubectl(t, "delete", "--ignore-not-found", "-f", rbacDir+"/03-clusterrolebinding.yaml", "-f", rbacDir+"/02-clusterrole.yaml")
	f.kubectl(t, "apply", "-f", rbacDir+"/00-namespace.yaml", "-f", rbacDir+"/01-serviceaccount.yaml")
	f.canI(t, "pods", "--as=system:serviceaccount:kubelet-reader:kubelet-reader", "no") // had another test granted it
	r := beside()
	assert.Equal(t, 1, r.code, "%s", r)
	const forbidden = "error: forbidden: GET https://192.168.49.2:10250/pods: 403 Forbidden: Forbidden (user=system:serviceaccount:kubelet-reader:kubelet-reader, verb=get, resource=nodes, subresource(s)=[pods proxy])\n" +
		"  system:serviceaccount:kubelet-reader:kubelet-reader may not get nodes/pods nor nodes/proxy — the kubelet asked the apiserver for each, in this order (v1.37 checks nodes/pods before nodes/proxy). Grant get nodes/pods, the narrower one: kubectl apply -f examples/rbac/\n"
	assert.Equal(t, forbidden, r.stderr)
	readmeShows(t, forbidden)

	// With examples/rbac: at once. The kubelet remembers a denial for 30 s (kubeadm writes
	// cacheUnauthorizedTTL: 0s, which the kubelet defaults:
	// pkg/kubelet/apis/config/v1beta1/defaults.go#L106-L108 (obj.Authorization.Webhook.CacheUnauthorizedTTL)),
	// but it remembers it for the whole SubjectAccessReview, the user's extra fields included
	// (staging/src/k8s.io/apiserver/plugin/pkg/authorizer/webhook/webhook.go#L220 (key, err := json.Marshal(r.Spec))),
	// and each run mints a new token whose credential ID is another
	// (pkg/serviceaccount/claims.go#L344 (CredentialID: authenticationtokenjwt.CredentialIDForJTI(jti),)).
	f.applyRBAC(t)
	applied := time.Now()
	require.Eventually(t, func() bool { r = beside(); return r.code == 0 }, 30*time.Second, 250*time.Millisecond, "%s", &r) // &r: the last answer
	t.Logf("the kubelet let the reader in %s after kubectl apply", time.Since(applied).Round(time.Millisecond))
	for _, pod := range []string{"etcd-minikube", "kube-apiserver-minikube", "kube-controller-manager-minikube", "kube-scheduler-minikube"} {
		assert.Contains(t, r.stdout, pod)
	}

	t.Run("runningpods: nodes/pods is enough", func(t *testing.T) {
		r := beside("--endpoint=runningpods")
		assert.Equal(t, 0, r.code, "%s", r)
		assert.Contains(t, r.stdout, "kube-apiserver-minikube")
	})
	t.Run("configz: the kubelet asks for nodes/configz, then nodes/proxy, and gets no to both; the error's commands grant it", func(t *testing.T) {
		r := beside("--endpoint=configz")
		assert.Equal(t, 1, r.code, "%s", r)
		// examples/rbac does not grant nodes/configz: the error says so, and gives the rule and the
		// commands that add it, rather than pointing at files that would not help.
		const forbidden = "error: forbidden: GET https://192.168.49.2:10250/configz: 403 Forbidden: Forbidden (user=system:serviceaccount:kubelet-reader:kubelet-reader, verb=get, resource=nodes, subresource(s)=[configz proxy])\n" +
			"  system:serviceaccount:kubelet-reader:kubelet-reader may not get nodes/configz nor nodes/proxy — the kubelet asked the apiserver for each, in this order (v1.37 checks nodes/configz before nodes/proxy). " +
			`Grant get nodes/configz, the narrower one: no role of examples/rbac grants it. Add the rule {apiGroups: [""], resources: ["nodes/configz"], verbs: ["get"]}: ` +
			"kubectl create clusterrole get-nodes-configz --verb=get --resource=nodes/configz, then kubectl create clusterrolebinding get-nodes-configz:kubelet-reader:kubelet-reader --clusterrole=get-nodes-configz --serviceaccount=kubelet-reader:kubelet-reader\n"
		assert.Equal(t, forbidden, r.stderr)
		readmeShows(t, forbidden)

		// Its commands, as it gives them.
		commands := regexp.MustCompile(`kubectl (create clusterrole(?:binding)? \S+ --\S+ --\S+?),?\s`).FindAllStringSubmatch(r.stderr, -1)
		require.Len(t, commands, 2, "a role and its binding: %s", r.stderr)
		for _, c := range commands {
			f.kubectl(t, strings.Fields(c[1])...)
			readmeShows(t, "$ kubectl "+c[1]+"\n")
		}
		t.Cleanup(func() {
			f.kubectl(t, "delete", "clusterrolebinding", "get-nodes-configz:kubelet-reader:kubelet-reader")
			f.kubectl(t, "delete", "clusterrole", "get-nodes-configz")
			f.canI(t, "configz", "--as=system:serviceaccount:kubelet-reader:kubelet-reader", "no")
		})
		// At once: each run mints a new token, which the kubelet's denial cache does not know.
		r = beside("--endpoint=configz")
		require.Equal(t, 0, r.code, "%s", r)
		assert.Contains(t, r.stdout, `"kubeletconfig"`)
		readmeShows(t, "--endpoint=configz\n"+strings.Join(strings.Split(r.stdout, "\n")[:2], "\n")+"\n")
	})
	t.Run("the apiserver's answer, as the kubelet asks it", func(t *testing.T) {
		asReader := "--as=system:serviceaccount:kubelet-reader:kubelet-reader"
		for sub, want := range map[string]string{"pods": "yes", "proxy": "no", "configz": "no"} {
			r := f.kubectlResult(t, "auth", "can-i", "get", "nodes/"+nodeName, "--subresource="+sub, asReader)
			assert.Equal(t, want, strings.TrimSpace(r.stdout), "get nodes/%s", sub)
		}
		readmeShows(t, "$ kubectl auth can-i get nodes/minikube --subresource=proxy "+asReader+"\nno\n")
		// A trap: kubectl reads "nodes/proxy" as the node named proxy, which get nodes allows.
		r := f.kubectlResult(t, "auth", "can-i", "get", "nodes/proxy", asReader)
		assert.Equal(t, "yes", strings.TrimSpace(r.stdout))
	})
}

// The apiserver's node proxy: it works with the user's own credentials from this machine's
// network, where the node's IP is not reachable; and when the kubelet refuses the apiserver's
// kubelet-client identity, the error names that identity and kubeadm's binding, not the user's
// RBAC — and its fix is kubeadm's own.
func TestProxy(t *testing.T) {
	f := nodeFixture(t)

	r := f.client(t, "--node", nodeName, "--via=apiserver", "-o", "wide")
	require.Equal(t, 0, r.code, "%s", r)
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Greater(t, len(rows), 5)
	for _, row := range rows[1:] {
		assert.Regexp(t, `\sapiserver\s`, row, "the VIA column")
	}

	t.Run("auto: the kubelet unreachable, the proxy asked instead, and said so", func(t *testing.T) {
		r := f.client(t, "--node", nodeName, "--kubelet-port=1", "--auth=kubeconfig", "-o", "name")
		assert.Equal(t, 0, r.code, "%s", r)
		assert.Contains(t, r.stdout, "pod/kube-apiserver-minikube")
		assert.Contains(t, r.stderr, `note: the kubelet of minikube could not be reached (connection refused: Get "https://192.168.49.2:1/pods": dial tcp 192.168.49.2:1: connect: connection refused); fetched through the apiserver's node proxy instead.`)
	})

	// What kubeadm made: a client certificate for the apiserver with no group
	// (cmd/kubeadm/app/phases/certs/certlist.go#L312-L325 (func KubeadmCertKubeletClient)), and
	// one binding for that user to system:kubelet-api-admin
	// (cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go#L135-L154 (func AllowAPIServerToAccessKubeletAPI)).
	block, _ := pem.Decode([]byte(f.inNode(t, "cat", "/var/lib/minikube/certs/apiserver-kubelet-client.crt")))
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, "kube-apiserver-kubelet-client", cert.Subject.CommonName)
	assert.Empty(t, cert.Subject.Organization, "no group: only its own binding lets it in")
	const binding = "kubeadm:apiserver-kubelet-client"
	kubeadms := `{.roleRef.name} {.subjects[0].kind} {.subjects[0].name}`
	assert.Equal(t, "system:kubelet-api-admin User kube-apiserver-kubelet-client", f.kubectl(t, "get", "clusterrolebinding", binding, "-o", "jsonpath="+kubeadms))

	// Without it, the kubelet refuses the apiserver — once the apiserver's authorizer has seen the
	// binding go: it answers from an informer's cache, a moment behind the delete.
	f.kubectl(t, "delete", "clusterrolebinding", binding)
	f.canI(t, "configz", "--as=kube-apiserver-kubelet-client", "no")
	f.canI(t, "proxy", "--as=kube-apiserver-kubelet-client", "no")
	t.Cleanup(func() {
		if f.kubectlResult(t, "get", "clusterrolebinding", binding).code != 0 {
			f.kubectl(t, "create", "clusterrolebinding", binding, "--clusterrole=system:kubelet-api-admin", "--user=kube-apiserver-kubelet-client")
		}
		f.canI(t, "proxy", "--as=kube-apiserver-kubelet-client", "yes")
	})
	// …but not at once for what it asked before: the kubelet remembers an allowed request for
	// five minutes (pkg/kubelet/apis/config/v1beta1/defaults.go#L103-L105 (obj.Authorization.Webhook.CacheAuthorizedTTL)),
	// and the apiserver's identity is the same on every request.
	r = f.client(t, "--node", nodeName, "--via=apiserver", "-o", "name")
	assert.Equal(t, 0, r.code, "a revoked permission still works from the kubelet's cache: %s", r)

	// And the fallback counts: for /configz the kubelet asks for nodes/configz, then nodes/proxy, and
	// any kubectl logs or exec through the apiserver in the last five minutes (another test's) left
	// nodes/proxy allowed there. A restarted kubelet remembers nothing.
	f.inNode(t, "systemctl", "restart", "kubelet")
	require.Eventually(t, func() bool {
		r = f.client(t, "--node", nodeName, "--via=apiserver", "--endpoint=configz")
		return strings.Contains(r.stderr, "403 Forbidden")
	}, 2*time.Minute, 2*time.Second, "the restarted kubelet refuses the apiserver's identity: %s", &r)
	assert.Equal(t, 1, r.code, "%s", r)
	const refused = "error: forbidden: GET /api/v1/nodes/minikube/proxy/configz: 403 Forbidden, relayed from the kubelet: Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[configz proxy])\n" +
		"  The kubelet refused the apiserver's own kubelet-client identity (kube-apiserver-kubelet-client) — not yours: the apiserver let you through. That identity needs nodes/proxy; kubeadm binds it to system:kubelet-api-admin: kubectl create clusterrolebinding kubeadm:apiserver-kubelet-client --clusterrole=system:kubelet-api-admin --user=kube-apiserver-kubelet-client\n"
	assert.Equal(t, refused, r.stderr)
	readmeShows(t, refused)
	fix := regexp.MustCompile(`kubectl (create clusterrolebinding \S+ --clusterrole=\S+ --user=\S+)`).FindStringSubmatch(r.stderr)
	require.NotNil(t, fix, "the error gives the command that fixes it")

	// The fix it gives is kubeadm's binding, to the letter.
	f.kubectl(t, strings.Fields(fix[1])...)
	assert.Equal(t, "system:kubelet-api-admin User kube-apiserver-kubelet-client", f.kubectl(t, "get", "clusterrolebinding", binding, "-o", "jsonpath="+kubeadms))
	// A permission the kubelet has not been asked about since its restart, so that no cached answer
	// stands in, once the apiserver's authorizer has seen the binding back.
	f.canI(t, "stats", "--as=kube-apiserver-kubelet-client", "yes")
	r = f.client(t, "--node", nodeName, "--via=apiserver", "--endpoint=stats/summary")
	assert.Equal(t, 0, r.code, "%s", r)
	assert.Contains(t, r.stdout, `"nodeName": "minikube"`)
}

// doctor, run next to the node: one line per check, the certificate check naming the
// hostname-only SAN and the fix; following the fixes it gives leads to all checks passing.
func TestDoctor(t *testing.T) {
	f := nodeFixture(t)
	f.applyRBAC(t)

	r := f.client(t, "doctor", "--node", nodeName)
	assert.Equal(t, 1, r.code, "%s", r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 7, "a header and six checks:\n%s", r.stdout)
	want := []string{
		`^NODE +CHECK +RESULT +DETAIL$`,
		`^minikube +discovery +ok +192\.168\.49\.2:10250 \(InternalIP; port from daemonEndpoints\)$`,
		`^minikube +dns/tcp +ok +192\.168\.49\.2 resolves to 192\.168\.49\.2; TCP connected in \S+$`,
		`^minikube +tls +FAIL +SANs \[minikube\], issuer "minikube-ca@\d+", expires \S+; no pending serving CSR; x509: cannot validate certificate for 192\.168\.49\.2 because it doesn't contain any IP SANs$`,
		`^minikube +credentials +ok +a 10m0s token of the ServiceAccount kubelet-reader/kubelet-reader \(TokenRequest\): the kubelet will see system:serviceaccount:kubelet-reader:kubelet-reader \(groups system:serviceaccounts, system:serviceaccounts:kubelet-reader, system:authenticated\)$`,
		`^minikube +permissions +ok +get nodes/pods: yes; get nodes/proxy: no$`,
		`^minikube +fetch +FAIL +certificate not trusted: .*doesn't contain any IP SANs$`,
	}
	for i, w := range want {
		assert.Regexp(t, w, lines[i])
	}
	// The README shows this run; its lines that do not change from run to run, as they are.
	for _, i := range []int{0, 1, 4, 5, 6} {
		readmeShows(t, lines[i]+"\n")
	}
	const fix = "fix (minikube, tls): the certificate names the Node's Hostname (minikube): --kubelet-tls-server-name=Hostname checks it by that name while dialing 192.168.49.2\n" +
		"error: 2 checks failed\n"
	assert.Equal(t, fix, r.stderr)
	readmeShows(t, fix)

	t.Run("-o json: the same checks, for a program", func(t *testing.T) {
		r := f.client(t, "doctor", "--node", nodeName, "-o", "json")
		assert.Equal(t, 1, r.code, "%s", r)
		checks := decodeChecks(t, r)
		var verdicts []agent.Verdict
		for _, ch := range checks {
			verdicts = append(verdicts, ch.Verdict)
		}
		assert.Equal(t, []agent.Verdict{"ok", "ok", "FAIL", "ok", "ok", "FAIL"}, verdicts)
		assert.Equal(t, "the certificate names the Node's Hostname (minikube): --kubelet-tls-server-name=Hostname checks it by that name while dialing 192.168.49.2", checks[2].Fix)
		assert.NotContains(t, r.stderr, "fix (", "the fixes are in the JSON")
	})

	// Its first fix alone is half of it: the certificate names the host, but is self-signed.
	r = f.client(t, "doctor", "--node", nodeName, "--kubelet-tls-server-name=Hostname")
	assert.Equal(t, 1, r.code, "%s", r)
	assert.Regexp(t, `(?m)^minikube +discovery +ok +192\.168\.49\.2:10250 \(InternalIP; port from daemonEndpoints\); certificate checked for minikube$`, r.stdout)
	assert.Regexp(t, `(?m)^minikube +tls +FAIL +SANs \[minikube\], issuer "minikube-ca@\d+", .*x509: certificate signed by unknown authority$`, r.stdout)
	assert.Contains(t, r.stderr, "fix (minikube, tls): self-signed by the kubelet (no serverTLSBootstrap): have the cluster CA sign it (serverTLSBootstrap: true, then kubectl certificate approve), or trust this certificate with --kubelet-ca-file")

	// The second: every check passes.
	r = f.client(t, "doctor", "--node", nodeName, "--kubelet-tls-server-name=Hostname", "--kubelet-ca-file", f.kubeletCert)
	assert.Equal(t, 0, r.code, "%s", r)
	assert.Regexp(t, `(?m)^minikube +tls +ok +SANs \[minikube\], issuer "minikube-ca@\d+", .*; trusted for minikube$`, r.stdout)
	assert.Regexp(t, `(?m)^minikube +fetch +ok +\d+ pods from https://192\.168\.49\.2:10250/pods over HTTP/1\.1$`, r.stdout)
	assert.Empty(t, r.stderr)
}

func decodeChecks(t *testing.T, r result) []agent.Check {
	t.Helper()
	var checks []agent.Check
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &checks), "%s", r)
	var names []string
	for _, ch := range checks {
		names = append(names, ch.Name)
	}
	require.Equal(t, []string{"discovery", "dns/tcp", "tls", "credentials", "permissions", "fetch"}, names)
	return checks
}

// The client's READY, STATUS and RESTARTS, from the kubelet, are kubectl's from the apiserver —
// for kube-system's running pods and for the one examples/rbac's DaemonSet cannot start until
// its image is built (ErrImageNeverPull).
func TestTableAgreesWithKubectl(t *testing.T) {
	f := nodeFixture(t)
	f.applyRBAC(t)
	columns := func(out string, first int) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) < first+5 || fields[0] == "NODE" || fields[0] == "NAMESPACE" {
				continue
			}
			// namespace/name → READY STATUS RESTARTS (the count; kubectl adds "(5m ago)")
			m[fields[first]+"/"+fields[first+1]] = strings.Join(fields[first+2:first+5], " ")
		}
		return m
	}
	var ours, theirs map[string]string
	require.Eventually(t, func() bool {
		r := f.client(t, "--node", nodeName, "--via=kubelet", "--kubelet-ca-file", f.kubeletCert, "--kubelet-tls-server-name=Hostname")
		if r.code != 0 {
			return false
		}
		ours, theirs = columns(r.stdout, 1), columns(f.kubectl(t, "get", "pods", "-A"), 0)
		// Until the DaemonSet's pod has settled (ContainerCreating agrees too, but is not the point).
		return ours["kubelet-reader/"+daemonSetPod(ours)] == "0/1 ErrImageNeverPull 0" && assert.ObjectsAreEqual(theirs, ours)
	}, time.Minute, time.Second, "client:\n%v\nkubectl:\n%v", &ours, &theirs) // pointers: the last answers
	// kube-system's (the control plane's four, CoreDNS, kube-proxy, storage-provisioner) and the
	// DaemonSet's. CoreDNS counts once: minikube scales its Deployment to one replica during the
	// start, and under load the second pod may still be there (a run showed nine rows).
	kinds := map[string]bool{}
	for key := range ours {
		if i := strings.Index(key, "/coredns-"); i >= 0 {
			key = key[:i] + "/coredns"
		}
		kinds[key] = true
	}
	assert.Len(t, kinds, 8, "kube-system's seven kinds of pod and the DaemonSet's: %v", ours)
}

func daemonSetPod(rows map[string]string) string {
	for key := range rows {
		if name, ok := strings.CutPrefix(key, "kubelet-reader/kubelet-reader-"); ok {
			return "kubelet-reader-" + name
		}
	}
	return ""
}

// The other way out of the self-signed certificate: the kubelet asks the cluster's CA for its
// serving certificate (serverTLSBootstrap: true), an admin approves the CSR, and the client's
// defaults — the cluster CA, the InternalIP — work with no TLS flag at all. It restarts the
// kubelet, and puts it back as kubeadm left it, running the pods it ran and those that were ready
// ready again, before any other test (they run in any order) asks it anything.
func TestServingCertificateFromTheClusterCA(t *testing.T) {
	f := nodeFixture(t)
	f.applyRBAC(t)
	before, err := f.pods(t)
	require.NoError(t, err)
	// What the restarted kubelet must run again: an empty list would make that check pass on nothing.
	require.Contains(t, before, "kube-system/kube-apiserver-minikube", "the pods the kubelet runs before its restart")
	const config = "/var/lib/kubelet/config.yaml"
	f.inNode(t, "cp", config, config+".kubeadm")
	t.Cleanup(func() {
		f.inNode(t, "sh", "-c", "mv "+config+".kubeadm "+config+" && systemctl restart kubelet")
		// No CSR of this kubelet's left pending (the test may have failed before approving it):
		// doctor says "no pending serving CSR".
		for _, csr := range f.pendingServingCSRs(t) {
			f.kubectl(t, "delete", "csr", csr)
		}
		require.Eventually(t, func() bool {
			r := f.client(t, "doctor", "--node", nodeName, "-o", "json")
			return r.code != 0 && strings.Contains(r.stdout, `issuer \"minikube-ca@`)
		}, time.Minute, time.Second, "the kubelet serves its self-signed certificate again")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			now, err := f.pods(t)
			if !assert.NoError(c, err) {
				return
			}
			assert.Subset(c, slices.Collect(maps.Keys(now)), slices.Collect(maps.Keys(before)), "the pods it ran")
			for pod, ready := range before {
				assert.True(c, !ready || now[pod], "%s ready again", pod)
			}
		}, 2*time.Minute, time.Second, "the restarted kubelet runs the pods it ran, those that were ready ready again")
	})
	// What `minikube start --extra-config=kubelet.rotate-server-certificates=true` asks of the
	// kubelet: that flag sets this field, cmd/kubelet/app/options/options.go#L409 ("rotate-server-certificates").
	f.inNode(t, "sh", "-c", "echo 'serverTLSBootstrap: true' >> "+config+" && systemctl restart kubelet")

	// The kubelet asks for a certificate signed by kubernetes.io/kubelet-serving, and has none
	// to show until someone approves it.
	var csr string
	require.Eventually(t, func() bool {
		if pending := f.pendingServingCSRs(t); len(pending) > 0 {
			csr = pending[0]
			return true
		}
		return false
	}, time.Minute, 500*time.Millisecond, "a pending kubelet-serving CSR")
	// (Eventually: the kubelet may ask for it before it listens.)
	var r result
	require.Eventually(t, func() bool {
		r = f.client(t, "--node", nodeName, "--via=kubelet")
		return r.code == 1 && strings.Contains(r.stderr, "remote error: tls: internal error")
	}, 30*time.Second, 500*time.Millisecond, "no serving certificate yet: the kubelet fails every handshake\n%s", &r) // &r: the last answer
	// The error says why, and names the CSR to approve: the one the kubelet asked for.
	want := "error: handshake refused: Get \"https://192.168.49.2:10250/pods\": remote error: tls: internal error\n" +
		"  The kubelet failed the TLS handshake on its side (alert internal_error), as a kubelet with no serving certificate does: " +
		"with serverTLSBootstrap: true it has none until its kubernetes.io/kubelet-serving CSR is approved and signed. " +
		"The proxy would meet the same, so there is no failover. Pending for minikube: " + csr + ": kubectl certificate approve " + csr + "\n"
	assert.Equal(t, want, r.stderr)
	readmeShowsCSR(t, want, csr)

	// doctor, the same: the handshake refused, not "a port that does not speak TLS", and the
	// CSR to approve — whose command, run as doctor gives it, is the fix.
	r = f.client(t, "doctor", "--node", nodeName)
	assert.Equal(t, 1, r.code, "%s", r)
	tlsLine := regexp.MustCompile(`(?m)^minikube +tls +FAIL +handshake: remote error: tls: internal error; pending serving CSRs: (\S+) \(kubectl certificate approve (\S+)\)$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, tlsLine, "%s", r)
	assert.Equal(t, []string{csr, csr}, tlsLine[1:])
	readmeShowsCSR(t, tlsLine[0]+"\n", csr)
	fix := "fix (minikube, tls): the kubelet has no serving certificate until its CSR is approved: kubectl certificate approve " + csr + "\n" +
		"error: 2 checks failed\n"
	assert.Equal(t, fix, r.stderr, "the fix, not \"the port does not speak TLS\"")
	readmeShowsCSR(t, fix, csr)
	approve := regexp.MustCompile(`kubectl (certificate approve \S+)\n`).FindStringSubmatch(r.stderr)
	require.NotNil(t, approve, "%s", r)

	f.kubectl(t, strings.Fields(approve[1])...)
	// What the kubelet does then, each step waited for: the signer (kube-controller-manager's)
	// issues the certificate into the CSR's status; the kubelet's certificate manager, watching
	// its CSR, stores it and serves it from the next handshake on; and the kubelet, restarted
	// moments ago, lists its pods once its sync loop has taken in the static pods — it answers
	// /pods before that (its sync loop waits for the runtime's first status check and the PLEG's
	// first relist), with an empty table, which a loaded machine makes last long enough to meet.
	const state = `go-template={{range .status.conditions}}{{.type}} {{end}}{{if .status.certificate}}certificate issued{{else}}no certificate{{end}}`
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got := f.kubectlResult(t, "get", "csr", csr, "-o", state)
		if assert.Zero(c, got.code, "kubectl get csr %s: %s", csr, got) {
			assert.Equal(c, "Approved certificate issued", got.stdout, "the CSR's conditions and certificate")
		}
	}, time.Minute, time.Second, "%s approved, and its certificate issued by the kubelet-serving signer", csr)
	require.Eventually(t, func() bool {
		r = f.client(t, "--node", nodeName, "--via=kubelet")
		return r.code == 0
	}, time.Minute, time.Second, "the kubelet serves the certificate issued for %s, trusted by the cluster CA for %s; the last answer:\n%s", csr, nodeIP, &r)
	require.Eventually(t, func() bool {
		r = f.client(t, "--node", nodeName, "--via=kubelet")
		return r.code == 0 && strings.Contains(r.stdout, "kube-apiserver-minikube")
	}, time.Minute, time.Second, "the restarted kubelet lists its static pods over the certificate; the last answer:\n%s", &r)

	r = f.client(t, "doctor", "--node", nodeName)
	assert.Equal(t, 0, r.code, "%s", r)
	assert.Regexp(t, `(?m)^minikube +tls +ok +SANs \[minikube 192\.168\.49\.2\], issuer "minikubeCA", expires \S+; no pending serving CSR; trusted for 192\.168\.49\.2$`, r.stdout)
}

// pendingServingCSRs are the names of the kubelet-serving CSRs minikube's kubelet asked for that
// nobody approved or denied yet.
func (f *fixture) pendingServingCSRs(t *testing.T) []string {
	t.Helper()
	// A line each: name, requester, conditions (none while pending).
	const csrs = `{range .items[?(@.spec.signerName=="kubernetes.io/kubelet-serving")]}{.metadata.name} {.spec.username} {.status.conditions[*].type}{"\n"}{end}`
	var pending []string
	for _, line := range strings.Split(f.kubectl(t, "get", "csr", "-o", "jsonpath="+csrs), "\n") {
		if fields := strings.Fields(line); len(fields) == 2 && fields[1] == "system:node:"+nodeName {
			pending = append(pending, fields[0])
		}
	}
	return pending
}
