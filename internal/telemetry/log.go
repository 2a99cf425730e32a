package telemetry

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
)

type (
	jobKey struct{}
	idsKey struct{}
)

// ids are the ids a piece of work learns as it goes (the API key a request
// authenticates with, the job it starts), for the log lines of the whole
// work: also those logged with a context made before they were known, as
// a request's log line is.
type ids struct {
	mu       sync.Mutex
	job, key string
}

// WithIDs returns ctx with room for the ids SetJob and SetKey learn later;
// ctx itself when it has room already.
func WithIDs(ctx context.Context) context.Context {
	if _, ok := ctx.Value(idsKey{}).(*ids); ok {
		return ctx
	}
	return context.WithValue(ctx, idsKey{}, &ids{})
}

// SetJob records the job the work under ctx (made by WithIDs) is about;
// without WithIDs it does nothing.
func SetJob(ctx context.Context, jobID string) {
	if x, ok := ctx.Value(idsKey{}).(*ids); ok && jobID != "" {
		x.mu.Lock()
		x.job = jobID
		x.mu.Unlock()
	}
}

// SetKey records the id of the API key the work under ctx (made by
// WithIDs) is done for (never the key itself).
func SetKey(ctx context.Context, keyID string) {
	if x, ok := ctx.Value(idsKey{}).(*ids); ok && keyID != "" {
		x.mu.Lock()
		x.key = keyID
		x.mu.Unlock()
	}
}

func learned(ctx context.Context) (job, key string) {
	x, ok := ctx.Value(idsKey{}).(*ids)
	if !ok {
		return "", ""
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.job, x.key
}

// WithJob returns ctx carrying the job id that log lines and spans of the
// work done under it are about.
func WithJob(ctx context.Context, jobID string) context.Context {
	if jobID == "" {
		return ctx
	}
	return context.WithValue(ctx, jobKey{}, jobID)
}

// JobID returns the job id of ctx (WithJob, else SetJob), or "".
func JobID(ctx context.Context) string {
	if id, _ := ctx.Value(jobKey{}).(string); id != "" {
		return id
	}
	id, _ := learned(ctx)
	return id
}

// KeyID returns the API key id SetKey recorded under ctx, or "".
func KeyID(ctx context.Context) string {
	_, id := learned(ctx)
	return id
}

// RecordContext returns ctx with the trace and the job (its command_id
// header) of a consumed record, for the log lines about it.
func RecordContext(ctx context.Context, kr *kgo.Record) context.Context {
	ctx = ExtractRecord(ctx, kr)
	return WithJob(ctx, RecordHeaders{kr}.Get("command_id"))
}

// LogHandler wraps h so that every record logged with a context carries
// trace_id and span_id of the context's span, job_id (WithJob or SetJob)
// and key_id (SetKey).
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

// NewJSONLogger is the production logger: JSON lines on w with trace and
// job ids.
func NewJSONLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(LogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})))
}

type logHandler struct{ next slog.Handler }

func (h logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
		if id := JobID(ctx); id != "" {
			r.AddAttrs(slog.String("job_id", id))
		}
		if id := KeyID(ctx); id != "" {
			r.AddAttrs(slog.String("key_id", id))
		}
	}
	return h.next.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler { return logHandler{h.next.WithAttrs(as)} }
func (h logHandler) WithGroup(name string) slog.Handler    { return logHandler{h.next.WithGroup(name)} }
