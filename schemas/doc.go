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
// A pointer field has its target's schema and is written as its target, nil
// as the zero value; a zero value reads back as nil. A record type can thus
// keep rarely set parts out of line, to be small in memory, without a
// change of schema or bytes. An inline part (avro.go) goes further: fields
// scattered over a record, out of line behind one pointer, nil while all
// of them are zero (VmRecord.Rare). A string field tagged intern:"true"
// is read as one copy shared by every record decoded with that value, and
// a one-entry map[string]int64 field so tagged as one map (intern.go).
//
// The direct codec of today's schemas (binary.go, decode.go) reads and
// writes fields through unsafe pointers at offsets taken from reflect;
// nothing else in the package uses unsafe.
//
// schemas imports nothing else of vmplane and never does I/O.
package schemas
