package roles

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
)

// Observer is a role's small HTTP server for operators (--metrics-addr):
// /metrics (telemetry.Default, in the format the scraper asks for), /healthz (the process
// answers) and /readyz (every registered check passes: partitions
// restored, stores reachable). One Observer serves every role of a
// process, so the dev stack has one address for all of them.
type Observer struct {
	mu     sync.Mutex
	checks map[string]func(context.Context) error
}

// NewObserver returns an observer with no checks.
func NewObserver() *Observer { return &Observer{checks: map[string]func(context.Context) error{}} }

// Check registers a readiness check under name (replacing one of the name).
func (o *Observer) Check(name string, f func(context.Context) error) {
	o.mu.Lock()
	o.checks[name] = f
	o.mu.Unlock()
}

// Ready runs every check and returns the failures, by name.
func (o *Observer) Ready(ctx context.Context) error {
	o.mu.Lock()
	names := make([]string, 0, len(o.checks))
	for n := range o.checks {
		names = append(names, n)
	}
	checks := make(map[string]func(context.Context) error, len(o.checks))
	for n, f := range o.checks {
		checks[n] = f
	}
	o.mu.Unlock()
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if err := checks[n](ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Handler serves /metrics, /healthz and /readyz.
func (o *Observer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", telemetry.Default.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := o.Ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// Serve listens on addr and serves until ctx ends; it returns the address
// bound (addr may have port 0).
func (o *Observer) Serve(ctx context.Context, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("metrics listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: o.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed
	return ln.Addr().String(), nil
}

// ProcessorReady is the readiness of a processor: its group gave it
// partitions and their state is restored.
func ProcessorReady(p Processor) func(context.Context) error {
	return func(context.Context) error { return p.ReadyErr() }
}

// KafkaReady checks that a broker answers through cl.
func KafkaReady(cl *kgo.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := cl.Ping(ctx); err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		return nil
	}
}

// WatchLag reports kafka_consumergroup_lag for sources on /metrics through
// a client of cfg; the client lives as long as the process.
func WatchLag(cfg kafka.Config, sources ...telemetry.LagSource) (*kgo.Client, error) {
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		return nil, fmt.Errorf("lag client: %w", err)
	}
	telemetry.RegisterLag(cl, sources...)
	return cl, nil
}

// ProcessorLag is the lag source of a processor kind's group.
func ProcessorLag(cfg kafka.Config, kind string) telemetry.LagSource {
	return telemetry.LagSource{Group: cfg.Group("vmplane-processor-" + kind)}
}
