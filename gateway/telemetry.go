package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// withTelemetry starts the server span of each request (a child of the
// client's traceparent, if it sent one), counts the request by route
// template, method and status, and times it unless it is an event stream
// or a long-poll, whose duration is the client's choice. The route is
// matched on router up front so that a label is "/v1/vms/{id}", never one
// series per VM id. The request's context gets room for the ids learned
// on the way (the caller's key id, the job it starts or asks about), which
// the request's log lines then carry.
func (s *Server) withTelemetry(router *mux.Router, next http.Handler) http.Handler {
	prepareHTTPMetrics()
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
		ctx = telemetry.WithIDs(ctx)
		if strings.HasPrefix(route, "/v1/jobs/{id}") {
			telemetry.SetJob(ctx, clip(m.Vars["id"], 128))
		}
		ctx, span := telemetry.Tracer().Start(ctx, method+" "+route,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", method),
				attribute.String("http.route", route),
				attribute.String("url.path", r.URL.Path)))
		defer span.End()
		stream := streamRoutes[route]
		if stream {
			open := telemetry.HTTPStreams.With(route)
			open.Add(1)
			defer open.Add(-1)
		}
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
		if !stream && !longPoll(route, r) {
			telemetry.HTTPSeconds.With(route, method).Observe(time.Since(start).Seconds())
		}
	})
}

// streamRoutes are the routes that answer an event stream (apiOps' stream
// flag): one request lasts as long as its client listens.
var streamRoutes = func() map[string]bool {
	out := map[string]bool{}
	for _, op := range apiOps {
		if op.stream {
			out["/v1"+op.path] = true
		}
	}
	return out
}()

// longPoll says whether r waits for its job to change (GET
// /v1/jobs/{id}?wait=): its latency is mostly the wait it asked for.
func longPoll(route string, r *http.Request) bool {
	return route == "/v1/jobs/{id}" && r.URL.Query().Get("wait") != ""
}

// prepareHTTPMetrics creates the series of every documented route at 0:
// its success status's count, its latency (streams: how many are open),
// so that a fresh gateway's /metrics has them all and rate() has a start.
func prepareHTTPMetrics() {
	for _, op := range apiOps {
		route := "/v1" + op.path
		telemetry.HTTPRequests.With(route, op.method, strconv.Itoa(op.status))
		if op.stream {
			telemetry.HTTPStreams.With(route)
		} else {
			telemetry.HTTPSeconds.With(route, op.method)
		}
	}
}

// InventoryReader reads what the inventory gauges report
// (readmodel.Reader).
type InventoryReader interface {
	Inventory(ctx context.Context) (readmodel.Inventory, error)
}

// InventoryEvery is how often ReportInventory reads the read model: the
// gauges are at most that old, and the reads (grouped scans of vms and
// hosts) cost a gateway a few hundred milliseconds of a database's time
// per period at 500,000 VMs.
const InventoryEvery = 30 * time.Second

// ReportInventory sets the inventory gauges (VMs by state, hosts by
// status, free capacity per zone) from rm every period until ctx ends. A
// failed read keeps the last values; vmplane_inventory_read_timestamp_seconds
// says how old they are.
func ReportInventory(ctx context.Context, rm InventoryReader, every time.Duration, log *slog.Logger) {
	var inv inventoryGauges
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		got, err := rm.Inventory(rctx)
		cancel()
		switch {
		case err == nil:
			inv.set(got, time.Now())
		case ctx.Err() == nil:
			log.Warn("inventory not read", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// inventoryGauges remembers the label values it has set, so that a state
// no VM is in any more reads 0 rather than its last count.
type inventoryGauges struct {
	states, statuses, zones map[string]bool
}

func (g *inventoryGauges) set(inv readmodel.Inventory, now time.Time) {
	g.states = setCounts(telemetry.VMs, g.states, inv.VMsByState)
	g.statuses = setCounts(telemetry.Hosts, g.statuses, inv.HostsByStatus)
	cpu := make(map[string]int64, len(inv.Zones))
	mem := make(map[string]int64, len(inv.Zones))
	for _, z := range inv.Zones {
		cpu[z.ZoneID] = z.FreeCPU
		mem[z.ZoneID] = z.FreeMemoryMB << 20
	}
	setCounts(telemetry.ZoneFreeMemory, g.zones, mem)
	g.zones = setCounts(telemetry.ZoneFreeCPU, g.zones, cpu)
	telemetry.InventoryReadSeconds.With().Set(float64(now.UnixMilli()) / 1000)
}

// setCounts sets v's series to counts, and those of before that counts
// lacks to 0; it returns the label values set.
func setCounts(v telemetry.GaugeVec, before map[string]bool, counts map[string]int64) map[string]bool {
	now := make(map[string]bool, len(counts)+len(before))
	for k := range before {
		if _, ok := counts[k]; !ok {
			v.With(k).Set(0)
		}
		now[k] = true
	}
	for k, n := range counts {
		v.With(k).Set(float64(n))
		now[k] = true
	}
	return now
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
