package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics (the Prometheus text, OpenMetrics or protobuf
// formats, native histograms in the latter), /healthz (JSON; status
// 200 when everything works, 503 when a source is degraded, so that a
// readiness probe or an alert can use it), and each view at /<name>
// (/clients, /consumers: its JSON, as kscope clients and kscope
// consumers --format json print it; a 404 saying so when it is off).
//
// With Config.Pprof, Go's profiler is served under /debug/pprof/ too.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	if a.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		// A scrape must never wait behind a slow one.
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		s := a.Status()
		w.Header().Set("Content-Type", "application/json")
		if s.Status != "ok" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
	})
	a.handleViews(mux)
	index := []byte(`<html><head><title>kscope agent</title></head><body><h1>kscope agent</h1>` +
		`<p><a href="/metrics">/metrics</a> <a href="/healthz">/healthz</a>` + a.viewLinks() + `</p></body></html>`)
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(index)
	})
	return mux
}

// Serve listens on addr and serves Handler until ctx ends. ready, when
// not nil, gets the address actually listened on (addr may have port 0).
func (a *Agent) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
