package telemetry

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Attribute names of the OpenTelemetry messaging conventions (Kafka).
const (
	attrSystem        = "messaging.system"
	attrOperationType = "messaging.operation.type"
	attrOperationName = "messaging.operation.name"
	attrDestination   = "messaging.destination.name"
	attrPartition     = "messaging.destination.partition.id"
	attrGroup         = "messaging.consumer.group.name"
	attrOffset        = "messaging.kafka.offset"
	attrKey           = "messaging.kafka.message.key"
	attrBatchCount    = "messaging.batch.message_count"
	// attrType is ours: the Avro record name (the `type` header).
	attrType = "vmplane.record.type"
	// AttrJobID is ours: the job a span works on.
	AttrJobID = "vmplane.job.id"
)

// Message locates one consumed or produced record.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	Type      string
	// Group is the consumer group; empty for a producer.
	Group string
}

func (m Message) attributes(op string) []attribute.KeyValue {
	kv := []attribute.KeyValue{
		attribute.String(attrSystem, "kafka"),
		attribute.String(attrOperationType, op),
		attribute.String(attrOperationName, op),
		attribute.String(attrDestination, m.Topic),
	}
	if m.Key != "" {
		kv = append(kv, attribute.String(attrKey, m.Key))
	}
	if m.Type != "" {
		kv = append(kv, attribute.String(attrType, m.Type))
	}
	if m.Group != "" {
		kv = append(kv,
			attribute.String(attrGroup, m.Group),
			attribute.String(attrPartition, strconv.Itoa(int(m.Partition))),
			attribute.Int64(attrOffset, m.Offset))
	}
	return kv
}

// StartProcess starts the consumer span of one record, a child of the span
// whose context the record carried in headers ("process <topic>").
func StartProcess(ctx context.Context, headers map[string]string, m Message) (context.Context, trace.Span) {
	ctx = Extract(ctx, headers)
	if !enabled.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return Tracer().Start(ctx, "process "+m.Topic,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(m.attributes("process")...))
}

// StartSend starts the producer span of records to topic ("send <topic>");
// inject its context into the records' headers.
func StartSend(ctx context.Context, topic string, count int) (context.Context, trace.Span) {
	kv := Message{Topic: topic}.attributes("send")
	if count > 1 {
		kv = append(kv, attribute.Int(attrBatchCount, count))
	}
	return Tracer().Start(ctx, "send "+topic, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(kv...))
}

// StartBatch starts the span of a consumer applying a batch of records
// ("process <group>"): a root linked to the traces of up to maxLinks of
// the records, since one span cannot have every record's span as parent.
func StartBatch(ctx context.Context, group string, count int, links []trace.Link) (context.Context, trace.Span) {
	return Tracer().Start(ctx, "process "+group,
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(links...),
		trace.WithAttributes(
			attribute.String(attrSystem, "kafka"),
			attribute.String(attrOperationType, "process"),
			attribute.String(attrGroup, group),
			attribute.Int(attrBatchCount, count)))
}

// Link returns the link to the span context carried in headers, if any.
func Link(headers map[string]string) (trace.Link, bool) {
	sc := trace.SpanContextFromContext(Extract(context.Background(), headers))
	if !sc.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc}, true
}

// Fail marks span as failed with err.
func Fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// JobAttr is the span attribute naming the job (its command id).
func JobAttr(id string) attribute.KeyValue { return attribute.String(AttrJobID, id) }
