package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/ops/roles"
)

// observer serves /metrics, /healthz and /readyz of this process's role
// on --metrics-addr (VMPLANE_METRICS_ADDR); roles add readiness checks
// and lag sources to it.
var observer = roles.NewObserver()

// metricsURL is where the observer serves, for the dev banner; "" when off.
var metricsURL string

// observeFlags takes --metrics-addr ADDR (or =ADDR) out of args, since
// every role has it; the environment gives the default.
func observeFlags(args []string) (rest []string, addr string) {
	addr = os.Getenv("VMPLANE_METRICS_ADDR")
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		switch {
		case a == "metrics-addr" && i+1 < len(args) && strings.HasPrefix(args[i], "-"):
			addr = args[i+1]
			i++
		case strings.HasPrefix(a, "metrics-addr=") && strings.HasPrefix(args[i], "-"):
			addr = strings.TrimPrefix(a, "metrics-addr=")
		default:
			rest = append(rest, args[i])
		}
	}
	return rest, addr
}

// startObserving installs tracing from the environment (OTEL_*, VMPLANE_TRACE_*)
// and serves the observer on addr when set. The returned function flushes
// the spans.
func startObserving(ctx context.Context, role, addr string, log *slog.Logger) (func(), error) {
	tc, err := telemetry.ConfigFromEnv(os.Getenv, "vmplane-"+role)
	if err != nil {
		return nil, err
	}
	shutdown, err := telemetry.Setup(ctx, tc)
	if err != nil {
		return nil, err
	}
	if addr != "" {
		bound, err := observer.Serve(ctx, addr)
		if err != nil {
			return nil, err
		}
		metricsURL = "http://" + bound + "/metrics"
		log.Info("serving /metrics, /healthz and /readyz", "addr", bound)
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "vmplane: flushing spans:", err)
		}
	}, nil
}

// watchLag adds the lag of groups to /metrics; a failure only loses the
// metric.
func watchLag(cfg kafka.Config, log *slog.Logger, sources ...telemetry.LagSource) {
	if _, err := roles.WatchLag(cfg, sources...); err != nil {
		log.Warn("no consumer lag metric", "err", err)
	}
}
