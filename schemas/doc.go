// Package schemas is vmplane's contract: every record that travels through
// Kafka, as an Avro schema (avro/*.avsc, embedded) and a Go type that mirrors
// it, the codecs for Avro single-object encoding and the Confluent framing,
// and the topic table.
//
// The Avro record name, the Go type name and the record's `type` header are
// the same string. Every field has a default so that a reader with a newer
// schema can read every record ever written (BACKWARD_TRANSITIVE); the log is
// replayed from offset 0.
//
// schemas imports nothing else of vmplane and never does I/O.
package schemas
