package agent

import (
	"fmt"
	"strings"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

// ExampleRole is one ClusterRole of this repository's examples/rbac, as the hints name it: the
// directory that creates it, what it grants, and the ServiceAccount its binding gives it to.
// A hint may say "kubectl apply -f <Dir>" only for a permission listed here, and only to the
// identity bound here; TestExampleRolesAreTheFiles holds this table to the YAML, and
// TestForbiddenHintsGrantWhatTheySay follows every hint against the files.
type ExampleRole struct {
	Dir            string   // what to apply, from the repository's root: "examples/rbac/"
	ClusterRole    string   // its name
	ServiceAccount string   // NAMESPACE/NAME its ClusterRoleBinding binds
	Grants         []string // "VERB RESOURCE", as the kubelet asks: "get nodes/pods"
}

// ExampleRoles are examples/rbac's roles: the reader's (nodes, and nodes/pods — nothing else of
// the kubelet's API), and the opt-in node-proxy one (exec-equivalent).
var ExampleRoles = []ExampleRole{
	{Dir: "examples/rbac/", ClusterRole: "kubelet-reader", ServiceAccount: kubeletclient.DefaultServiceAccount,
		Grants: []string{"get nodes", "list nodes", "watch nodes", "get nodes/pods"}},
	{Dir: "examples/rbac/node-proxy/", ClusterRole: "kubelet-reader-node-proxy", ServiceAccount: kubeletclient.DefaultServiceAccount,
		Grants: []string{"get nodes/proxy"}},
}

// exampleRoleFor is the example role that grants permission ("get nodes/configz"), or nil.
func exampleRoleFor(permission string) *ExampleRole {
	for i, r := range ExampleRoles {
		for _, g := range r.Grants {
			if g == permission {
				return &ExampleRoles[i]
			}
		}
	}
	return nil
}

// proxyWarning is said wherever a hint leads to nodes/proxy.
const proxyWarning = "nodes/proxy is exec-equivalent: the kubelet authorizes /exec, /attach, /portForward and /run " +
	"as nodes/proxy too (a websocket upgrade is a GET), for every pod of every node the grant covers"

// grantHint says how to let user (a user name as the apiserver knows it, or "" when unknown)
// have permission ("get nodes/configz"): the example role that grants it — applied, or bound to
// user when the example binds it to another identity — or, when no example role grants it, the
// exact rule and the kubectl commands that add it. It never points at a file that does not
// grant the permission to that identity. user and permission may come from a server's answer:
// permission must be "VERB nodes/SUBRESOURCE" in Kubernetes' own characters (forbiddenHint
// checks it), and user goes into a command only quoted for a shell (bindCommand).
func grantHint(user, permission string) string {
	verb, resource, _ := strings.Cut(permission, " ")
	var hint string
	if role := exampleRoleFor(permission); role != nil {
		sa := "system:serviceaccount:" + strings.Replace(role.ServiceAccount, "/", ":", 1)
		switch {
		case user == sa:
			hint = "kubectl apply -f " + role.Dir
		case user == "":
			hint = "kubectl apply -f " + role.Dir + " grants it to the ServiceAccount " + role.ServiceAccount +
				" (the client's default); for another identity, bind its ClusterRole " + role.ClusterRole + ": " +
				bindCommand(role.ClusterRole, "")
		default:
			hint = "examples/rbac's ClusterRole " + role.ClusterRole + " grants it, but its binding names the ServiceAccount " +
				role.ServiceAccount + ", not " + kubeletclient.Printable(user, false) + ": kubectl apply -f " + role.Dir + ", then " + bindCommand(role.ClusterRole, user)
		}
	} else {
		name := verb + "-" + strings.ReplaceAll(resource, "/", "-") // get-nodes-configz
		hint = fmt.Sprintf(`no role of examples/rbac grants it. Add the rule {apiGroups: [""], resources: [%q], verbs: [%q]}: `+
			"kubectl create clusterrole %s --verb=%s --resource=%s, then %s", resource, verb, name, verb, resource, bindCommand(name, user))
	}
	if resource == "nodes/proxy" {
		hint += " — but " + proxyWarning + ": read examples/rbac/node-proxy/ first"
	}
	return hint
}

// bindCommand is the kubectl command that binds clusterRole to user: a ServiceAccount's user
// name becomes --serviceaccount, any other --user; "" leaves the subject for the reader to fill.
// The user name came from a server (a kubelet's 403, a SelfSubjectReview): it is quoted for a
// POSIX shell, and one that holds control characters is not written into the command at all.
func bindCommand(clusterRole, user string) string {
	const placeholder = "--serviceaccount=NAMESPACE:NAME (or --user=NAME)"
	subject, name := placeholder, clusterRole
	if sa, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok && strings.Count(sa, ":") == 1 {
		subject, name = "--serviceaccount=", clusterRole+":"+sa
		user = sa
	} else if user != "" {
		subject, name = "--user=", clusterRole+":"+user
	}
	// A binding's name is a path segment: no "/" or "%" (an OIDC user name may hold them).
	name = strings.NewReplacer("/", "-", "%", "-").Replace(name)
	quotedName, nameErr := ShellQuote(name)
	quotedUser, userErr := ShellQuote(user)
	refused := ""
	switch {
	case subject == placeholder:
		quotedName = clusterRole
	case nameErr != nil || userErr != nil:
		refused = " (the user name the server gave, " + kubeletclient.Printable(user, false) + ", holds control characters: it is not written into a command)"
		subject, quotedName = placeholder, clusterRole
	default:
		subject += quotedUser
	}
	return "kubectl create clusterrolebinding " + quotedName + " --clusterrole=" + clusterRole + " " + subject + refused
}
