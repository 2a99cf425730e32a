package telemetry

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

type jobKey struct{}

// WithJob returns ctx carrying the job id that log lines and spans of the
// work done under it are about.
func WithJob(ctx context.Context, jobID string) context.Context {
	if jobID == "" {
		return ctx
	}
	return context.WithValue(ctx, jobKey{}, jobID)
}

// JobID returns the job id of ctx, or "".
func JobID(ctx context.Context) string {
	id, _ := ctx.Value(jobKey{}).(string)
	return id
}

// LogHandler wraps h so that every record logged with a context carries
// trace_id and span_id of the context's span and job_id of WithJob.
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
	}
	return h.next.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler { return logHandler{h.next.WithAttrs(as)} }
func (h logHandler) WithGroup(name string) slog.Handler    { return logHandler{h.next.WithGroup(name)} }
