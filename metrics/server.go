package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Registry is the server's metrics: its own families plus the Go runtime
// and process collectors.
type Registry struct {
	reg  *prometheus.Registry
	coll *collector
	src  Sources
}

// NewRegistry returns a registry exporting src.
func NewRegistry(src Sources) *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), coll: newCollector(src), src: src}
	r.reg.MustRegister(r.coll, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Gatherer returns the registry, for tests and other exposition.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Families returns the server's own families that r exports (those
// whose sources are set), without the Go and process collectors.
func (r *Registry) Families() []Family { return append([]Family(nil), r.coll.fams...) }

// Handler serves /metrics and /healthz.
func (r *Registry) Handler(log *zap.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:      zap.NewStdLog(log),
		ErrorHandling: promhttp.ContinueOnError,
		Timeout:       10 * time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.src.Ready == nil || !r.src.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "starting or a listener is down")
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Server is the metrics HTTP listener.
type Server struct {
	l    net.Listener
	http *http.Server
	done chan struct{}
}

// Listen serves r's Handler on addr ("host:port") until Close.
func Listen(log *zap.Logger, addr string, r *Registry) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	s := &Server{l: l, done: make(chan struct{}), http: &http.Server{
		Handler:           r.Handler(log),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          zap.NewStdLog(log),
	}}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", zap.Error(err))
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Close stops the listener, letting scrapes in progress finish until ctx
// ends.
func (s *Server) Close(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.http.Close())
	}
	<-s.done
	return err
}
