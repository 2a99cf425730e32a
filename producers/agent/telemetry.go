package agent

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// commandSpan starts the span of executing one agent command, a child of
// the span that sent it, and puts the new span's traceparent in rec's
// headers (a copy), so the answer and the power report continue the job's
// trace. The call sites in commands.go are marked "telemetry:".
func (a *Agent) commandSpan(ctx context.Context, rec *schemas.Record, cmd *schemas.AgentCommand) (context.Context, trace.Span) {
	ctx, span := telemetry.StartProcess(ctx, rec.Headers, telemetry.Message{
		Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Key: rec.Key,
		Type: schemas.TypeName(rec.Value), Group: a.Group(),
	})
	span.SetAttributes(telemetry.JobAttr(cmd.CommandID))
	h := make(map[string]string, len(rec.Headers)+1)
	for k, v := range rec.Headers {
		h[k] = v
	}
	telemetry.Inject(ctx, h)
	rec.Headers = h
	return telemetry.WithJob(ctx, cmd.CommandID), span
}

// commandDone ends the span and counts the command by type and result.
func (a *Agent) commandDone(span trace.Span, rec schemas.Record, err error) {
	result := "ok"
	if err != nil {
		result = "error"
		telemetry.Fail(span, err)
	}
	telemetry.AgentCommands.With(schemas.TypeName(rec.Value), result).Inc()
	span.End()
}

// traceHeaders keeps only the trace of rec, for the power report that
// follows a command.
func traceHeaders(rec schemas.Record) map[string]string {
	if tp := rec.Headers["traceparent"]; tp != "" {
		return map[string]string{"traceparent": tp}
	}
	return nil
}
