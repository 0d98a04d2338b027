// Package routes builds the kubelet's HTTP route table from the real server code: every path
// the kubelet registers on its secure port (10250), its read-only port (10255) and its healthz
// port (10248), with the authorization attributes the secure port checks for each, and the gRPC
// services of its two local sockets.
//
// Nothing is listed by hand. The servers are the real ones: server.NewServer
// (pkg/kubelet/server/server.go#L340-L378 (func NewServer)), called the way
// ListenAndServeKubeletServer and ListenAndServeKubeletReadOnlyServer call it, and
// healthz.InstallHandler on a mux, as run() builds the healthz server. The paths are read
// from the server's go-restful container (its web services and the paths registered with
// Handle). The attributes come from the secure server's own authentication filter
// (pkg/kubelet/server/server.go#L381-L433 (func (s *Server) InstallAuthFilter)): a request
// for each path is sent through the server, the filter asks the kubelet's real attributes
// getter (server.NewNodeAuthorizerAttributesGetter, pkg/kubelet/server/auth.go) what to
// check, and the authorizer given here records what it is asked and denies, so no handler
// runs. The gRPC services are the generated service descriptions of the APIs
// ListenAndServePodResources and ListenAndServePodsServer register.
package routes

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	restful "github.com/emicklei/go-restful/v3"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/healthz"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	podresourcesv1alpha1 "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
	podsv1alpha1 "k8s.io/kubelet/pkg/apis/pods/v1alpha1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletconfigconversion "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/apis/podresources"
	"k8s.io/kubernetes/pkg/kubelet/apis/pods"
	kubeletdirs "k8s.io/kubernetes/pkg/kubelet/kubeletconfig"
	"k8s.io/kubernetes/pkg/kubelet/server"
	"k8s.io/kubernetes/pkg/kubelet/server/stats"
	"k8s.io/kubernetes/pkg/kubelet/util"
)

// The servers, as the table names them.
const (
	Secure   = "10250"
	ReadOnly = "10255"
	Healthz  = "10248"
)

// Route is one registered path.
type Route struct {
	// Path as registered: /pods, /exec/{podNamespace}/{podID}/{containerName}, /metrics/ (a
	// Handle path ending in "/" serves everything under it).
	Path string
	// On says, per server (Secure, ReadOnly, Healthz), which methods the server answers on
	// the path ("GET", "GET POST"; "any" for a path registered with Handle, whose handler
	// decides), or "disabled" where the server registers it only to answer 405 "... disabled".
	// A server without the path is not in the map.
	On map[string]string
	// Checks are the authorization attributes the secure server's filter checks, one per
	// method the secure server answers (GET for "any"): the subresources are tried in order,
	// and either allowing lets the request through.
	Checks []Check
}

// Check is what the secure server asks its authorizer for one method of a route.
type Check struct {
	Method string
	// Verb and the subresources of the resource "nodes", in the order the filter tries them.
	Verb         string
	Subresources []string
}

// Service is one gRPC service of a kubelet socket.
type Service struct {
	Socket  string // the socket, relative to the kubelet's root directory
	Name    string // the full service name
	Methods []string
}

// Table is the kubelet's route table.
type Table struct {
	Routes   []Route
	Services []Service
}

// Build constructs the real servers and reads their routes.
func Build(ctx context.Context, nodeName string) (*Table, error) {
	cfg, err := defaultConfig()
	if err != nil {
		return nil, err
	}
	rec := &recordingAuth{getter: server.NewNodeAuthorizerAttributesGetter(types.NodeName(nodeName))}
	host := &host{}
	analyzer := analyzer{}
	// As ListenAndServeKubeletServer builds it (flagz as the kubelet binary passes it) ...
	secure := server.NewServer(ctx, host, analyzer, nil, flagz.NamedFlagSetsReader{}, rec, cfg)
	// ... and as ListenAndServeKubeletReadOnlyServer does: no auth, no configuration.
	readOnly := server.NewServer(ctx, host, analyzer, nil, nil, nil, nil)

	byPath := map[string]*Route{}
	methods := map[string]map[string][]string{} // path → server → methods
	add := func(srv, path, method string) {
		if _, ok := byPath[path]; !ok {
			byPath[path] = &Route{Path: path, On: map[string]string{}}
			methods[path] = map[string][]string{}
		}
		if !slices.Contains(methods[path][srv], method) {
			methods[path][srv] = append(methods[path][srv], method)
		}
	}
	for srv, s := range map[string]*server.Server{Secure: &secure, ReadOnly: &readOnly} {
		c, err := container(s)
		if err != nil {
			return nil, err
		}
		for _, ws := range c.RegisteredWebServices() {
			for _, r := range ws.Routes() {
				add(srv, r.Path, r.Method)
			}
		}
		for _, p := range c.RegisteredHandlePaths() {
			method := "any"
			if disabled(s, p) {
				method = "disabled"
			}
			add(srv, p, method)
		}
	}
	hz := &recordingMux{}
	healthz.InstallHandler(hz) // run() builds the healthz server this way (cmd/kubelet/app/server.go)
	for _, p := range hz.patterns {
		add(Healthz, p, "any")
	}
	for path, r := range byPath {
		for srv, ms := range methods[path] {
			sort.Strings(ms)
			r.On[srv] = strings.Join(ms, " ")
		}
	}

	// Each route's checks, from the secure server's filter.
	if err := addChecks(byPath, methods, &secure, rec, nodeName); err != nil {
		return nil, err
	}

	t := &Table{}
	for _, r := range byPath {
		sort.Slice(r.Checks, func(i, j int) bool { return r.Checks[i].Method < r.Checks[j].Method })
		t.Routes = append(t.Routes, *r)
	}
	sort.Slice(t.Routes, func(i, j int) bool { return t.Routes[i].Path < t.Routes[j].Path })

	if t.Services, err = services(); err != nil {
		return nil, err
	}
	return t, nil
}

// addChecks asks the secure server's filter, for each route and method, which authorization
// attributes it checks.
func addChecks(byPath map[string]*Route, methods map[string]map[string][]string, secure *server.Server, rec *recordingAuth, nodeName string) error {
	for path, r := range byPath {
		for _, m := range methods[path][Secure] {
			method := m
			if m == "any" {
				method = http.MethodGet
			}
			asked := rec.ask(func() {
				req := httptest.NewRequest(method, concrete(r.Path), nil)
				secure.ServeHTTP(httptest.NewRecorder(), req)
			})
			if len(asked) == 0 {
				return fmt.Errorf("the secure server's filter asked nothing for %s %s", method, r.Path)
			}
			c := Check{Method: method, Verb: asked[0].GetVerb()}
			for _, a := range asked {
				if a.GetResource() != "nodes" || a.GetName() != nodeName {
					return fmt.Errorf("%s %s: attributes for %s/%s, not nodes/%s", method, r.Path, a.GetResource(), a.GetName(), nodeName)
				}
				c.Subresources = append(c.Subresources, a.GetSubresource())
			}
			r.Checks = append(r.Checks, c)
		}
	}

	return nil
}

// services are the gRPC services of the kubelet's two sockets, at the paths the kubelet
// computes (kl.getPodResourcesDir, getPodsAPIDir).
func services() ([]Service, error) {
	var out []Service
	podResources, err := util.LocalEndpoint(kubeletdirs.DefaultKubeletPodResourcesDirName, podresources.Socket)
	if err != nil {
		return nil, err
	}
	podsAPI, err := util.LocalEndpoint(kubeletdirs.DefaultKubeletPodsAPIDirName, pods.Socket)
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		socket string
		desc   grpc.ServiceDesc
	}{
		{podResources, podresourcesv1.PodResourcesLister_ServiceDesc},
		{podResources, podresourcesv1alpha1.PodResourcesLister_ServiceDesc},
		{podsAPI, podsv1alpha1.Pods_ServiceDesc},
	} {
		svc := Service{Socket: strings.TrimPrefix(s.socket, "unix:"), Name: s.desc.ServiceName}
		for _, m := range s.desc.Methods {
			svc.Methods = append(svc.Methods, m.MethodName)
		}
		for _, m := range s.desc.Streams {
			svc.Methods = append(svc.Methods, m.StreamName+" (stream)")
		}
		out = append(out, svc)
	}
	return out, nil
}

// defaultConfig is the kubelet's default configuration, as a config file with nothing in it
// gives: the debugging handlers, the system log handler, profiling and the debug flags handler on.
func defaultConfig() (*kubeletconfig.KubeletConfiguration, error) {
	versioned := &kubeletconfigv1beta1.KubeletConfiguration{}
	kubeletconfigconversion.SetDefaults_KubeletConfiguration(versioned)
	internal := &kubeletconfig.KubeletConfiguration{}
	if err := kubeletconfigconversion.Convert_v1beta1_KubeletConfiguration_To_config_KubeletConfiguration(versioned, internal, nil); err != nil {
		return nil, fmt.Errorf("default kubelet configuration: %w", err)
	}
	return internal, nil
}

// lister is what the server's go-restful container (its unexported field restfulCont, of the
// unexported type containerInterface) says about itself.
type lister interface {
	RegisteredWebServices() []*restful.WebService
	RegisteredHandlePaths() []string
}

// container reads the server's restfulCont field. Go offers no other way to a field the
// package does not export; if a later kubelet renames it, this says so.
func container(s *server.Server) (lister, error) {
	f := reflect.ValueOf(s).Elem().FieldByName("restfulCont")
	if !f.IsValid() {
		return nil, fmt.Errorf("server.Server has no field restfulCont in this kubelet version")
	}
	c, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(lister)
	if !ok {
		return nil, fmt.Errorf("server.Server's restfulCont does not list its routes")
	}
	return c, nil
}

// disabled says whether a Handle path of s answers 405 "... disabled": the read-only server
// registers the debugging paths only to say so (InstallDebuggingDisabledHandlers).
func disabled(s *server.Server, path string) bool {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, concrete(path), nil))
	return w.Code == http.StatusMethodNotAllowed && strings.Contains(w.Body.String(), "disabled")
}

var parameter = regexp.MustCompile(`\{[^}]*\}`)

// concrete turns a route into a request path: each {parameter} becomes "x", a trailing "/"
// gets "x" after it (a request under the path).
func concrete(path string) string {
	p := parameter.ReplaceAllString(path, "x")
	if strings.HasSuffix(p, "/") {
		p += "x"
	}
	return p
}

// recordingAuth authenticates every request as one user, asks the kubelet's real attributes
// getter what to check, records what the filter then asks, and allows nothing.
type recordingAuth struct {
	getter server.NodeRequestAttributesGetter
	mu     sync.Mutex
	asked  []authorizer.Attributes
}

func (a *recordingAuth) ask(do func()) []authorizer.Attributes {
	a.mu.Lock()
	a.asked = nil
	a.mu.Unlock()
	do()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked
}

func (a *recordingAuth) AuthenticateRequest(*http.Request) (*authenticator.Response, bool, error) {
	return &authenticator.Response{User: &user.DefaultInfo{Name: "route-table"}}, true, nil
}

func (a *recordingAuth) GetRequestAttributes(ctx context.Context, u user.Info, r *http.Request) []authorizer.Attributes {
	return a.getter.GetRequestAttributes(ctx, u, r)
}

func (a *recordingAuth) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, attrs)
	return authorizer.DecisionNoOpinion, "the route table allows nothing", nil
}

func (a *recordingAuth) AddListener(dynamiccertificates.Listener) {}
func (a *recordingAuth) Name() string                             { return "route-table" }
func (a *recordingAuth) CurrentCABundleContent() []byte           { return nil }
func (a *recordingAuth) VerifyOptions() (x509.VerifyOptions, bool) {
	return x509.VerifyOptions{}, false
}

// errNoKubelet is what the stand-ins answer: there is no kubelet behind this server.
var errNoKubelet = errors.New("no kubelet behind the route table's server")

// host is the kubelet as the server sees it. Building the server takes SyncLoopHealthCheck's
// method value; the secure server's requests never reach a handler. The read-only server's
// Handle paths are sent one GET each (to see which only say "disabled"), and its metrics
// handlers ask the host and the analyzer for data: they get an error.
type host struct{ server.HostInterface }

func (*host) SyncLoopHealthCheck(*http.Request) error { return nil }
func (*host) GetCachedMachineInfo() (*cadvisorapi.MachineInfo, error) {
	return nil, errNoKubelet
}
func (*host) GetVersionInfo() (*cadvisorapi.VersionInfo, error) { return nil, errNoKubelet }
func (*host) GetRequestedContainersInfo(string, cadvisorapi.RequestOptions) (map[string]*cadvisorapi.ContainerInfo, error) {
	return nil, errNoKubelet
}

type analyzer struct{ stats.ResourceAnalyzer }

func (analyzer) GetCPUAndMemoryStats(context.Context) (*statsapi.Summary, error) {
	return nil, errNoKubelet
}

// recordingMux records the patterns registered on it.
type recordingMux struct{ patterns []string }

func (m *recordingMux) Handle(pattern string, _ http.Handler) {
	m.patterns = append(m.patterns, pattern)
}
