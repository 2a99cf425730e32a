package gateway

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// withTelemetry starts the server span of each request (a child of the
// client's traceparent, if it sent one) and counts the request by route
// template, method and status. The route is matched on router up front so
// that a label is "/v1/vms/{id}", never one series per VM id.
func (s *Server) withTelemetry(router *mux.Router, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := "unmatched"
		var m mux.RouteMatch
		if router.Match(r, &m) && m.Route != nil {
			if t, err := m.Route.GetPathTemplate(); err == nil {
				route = t
			}
		}
		method := methodLabel(r.Method)
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := telemetry.Tracer().Start(ctx, method+" "+route,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", method),
				attribute.String("http.route", route),
				attribute.String("url.path", r.URL.Path)))
		defer span.End()
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(ctx))
		code := sw.status
		if code == 0 {
			code = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", code))
		if code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(code))
		}
		telemetry.HTTPRequests.With(route, method, strconv.Itoa(code)).Inc()
		telemetry.HTTPSeconds.With(route, method).Observe(time.Since(start).Seconds())
	})
}

// methodLabel is the method as a metric label and span name: one of the
// methods HTTP defines, else "other", so that a client cannot make a
// series per made-up method.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// traced returns r's headers plus the traceparent of a producer span
// ("send <topic>") under ctx's request span: the processors continue the
// trace from it, so one job is one trace. r's own map is not changed.
func traced(ctx context.Context, r schemas.Record) map[string]string {
	ctx, span := telemetry.StartSend(ctx, r.Topic, 1)
	defer span.End()
	span.SetAttributes(attribute.String("messaging.kafka.message.key", r.Key))
	if id := r.Headers["command_id"]; id != "" {
		span.SetAttributes(telemetry.JobAttr(id))
	}
	h := make(map[string]string, len(r.Headers)+1)
	for k, v := range r.Headers {
		h[k] = v
	}
	telemetry.Inject(ctx, h)
	return h
}
