package toykubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/server"
)

// debugPaths answer 405 on the read-only port, as the real kubelet's do when debugging handlers
// are off (pkg/kubelet/server/server.go#L708-L727 (func (s *Server) InstallDebuggingDisabledHandlers())).
var debugPaths = []string{"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", "/runningpods/", "/debug/pprof/", "/logs/"}

// handler serves what the toy knows: its pods and its health.
func (k *Kubelet) handler(readOnly bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		data, err := encodePods(k.pods.list())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	if readOnly {
		for _, p := range debugPaths {
			mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "Debug endpoints are disabled.", http.StatusMethodNotAllowed)
			})
		}
	}
	return mux
}

// encodePods writes a PodList as the kubelet does, with the API's own v1 codec
// (pkg/kubelet/server/server.go#L923-L933 (func encodePods)).
func encodePods(pods []*v1.Pod) ([]byte, error) {
	list := &v1.PodList{}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	return runtime.Encode(legacyscheme.Codecs.LegacyCodec(v1.SchemeGroupVersion), list)
}

// ListenAndServeReadOnly serves /pods and /healthz without authentication on address:port,
// until ctx ends.
func (k *Kubelet) ListenAndServeReadOnly(ctx context.Context, address net.IP, port uint, tp trace.TracerProvider) {
	k.serve(ctx, "read-only", net.JoinHostPort(address.String(), strconv.FormatUint(uint64(port), 10)), k.handler(true), nil, tp)
}

// ListenAndServe serves the authenticated API on kubeCfg's address and port: TLS with tlsConfig
// when it is not nil, and every request through auth when it is not nil — as the real server,
// which also falls back to plain HTTP without a tls.Config (a hollow node's case).
func (k *Kubelet) ListenAndServe(ctx context.Context, kubeCfg *kubeletconfig.KubeletConfiguration, tlsConfig *tls.Config, auth server.AuthInterface, tp trace.TracerProvider) {
	h := k.handler(false)
	if auth != nil {
		h = authFilter(ctx, auth, h)
	}
	k.serve(ctx, "secure", net.JoinHostPort(kubeCfg.Address, strconv.Itoa(int(kubeCfg.Port))), h, tlsConfig, tp)
}

// serve runs one HTTP server until ctx ends, then shuts it down.
func (k *Kubelet) serve(ctx context.Context, name, addr string, h http.Handler, tlsConfig *tls.Config, tp trace.TracerProvider) {
	logger := klog.FromContext(ctx).WithValues("server", name, "address", addr)
	if tp != nil {
		h = otelhttp.NewHandler(h, "toy-kubelet", otelhttp.WithTracerProvider(tp))
	}
	srv := &http.Server{Addr: addr, Handler: h, TLSConfig: tlsConfig, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	logger.Info("Toy kubelet listening")
	var err error
	if tlsConfig != nil {
		err = srv.ListenAndServeTLS("", "")
	} else {
		err = srv.ListenAndServe()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error(err, "Toy kubelet server failed")
	}
	<-stopped
}

// authFilter is the real server's filter (pkg/kubelet/server/server.go#L381-L433 (func (s *Server) InstallAuthFilter)):
// authenticate, or 401; then ask the authorizer about each set of attributes the request maps to
// (for /pods: nodes/pods, then nodes/proxy) and let the first allowed one through, or 403.
func authFilter(ctx context.Context, auth server.AuthInterface, next http.Handler) http.Handler {
	logger := klog.FromContext(ctx)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok, err := auth.AuthenticateRequest(r)
		if err != nil {
			logger.Error(err, "Unable to authenticate the request due to an error")
		}
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := auth.GetRequestAttributes(ctx, info.User, r)
		if len(attrs) == 0 {
			http.Error(w, "Authorization error: could not determine attributes for request", http.StatusForbidden)
			return
		}
		var subresources []string
		for _, attr := range attrs {
			subresources = append(subresources, attr.GetSubresource())
			decision, _, err := auth.Authorize(r.Context(), attr)
			if err != nil {
				msg := fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)", attr.GetUser().GetName(), attr.GetVerb(), attr.GetResource(), attr.GetSubresource())
				http.Error(w, msg, http.StatusInternalServerError)
				return
			}
			if decision == authorizer.DecisionAllow {
				next.ServeHTTP(w, r)
				return
			}
		}
		first := attrs[0]
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)", first.GetUser().GetName(), first.GetVerb(), first.GetResource(), subresources), http.StatusForbidden)
	})
}

// TLSConfig builds the tls.Config the real kubelet builds from its TLSOptions when it has
// certificate files and no rotation (pkg/kubelet/kubelet.go#L923-L994 (if kubeDeps.TLSOptions != nil {)):
// the serving certificate, and with a client CA, client certificates requested (not required:
// the authenticator decides).
func TLSConfig(opts *server.TLSOptions) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load serving certificate: %w", err)
	}
	cfg := &tls.Config{
		MinVersion: opts.MinVersion, CipherSuites: opts.CipherSuites, CurvePreferences: opts.CurvePreferences,
		Certificates: []tls.Certificate{cert},
	}
	if opts.ClientCAFile != "" {
		pool, err := certutil.NewPool(opts.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("load client CA file %s: %w", opts.ClientCAFile, err)
		}
		cfg.ClientAuth, cfg.ClientCAs = tls.RequestClientCert, pool
	}
	return cfg, nil
}
