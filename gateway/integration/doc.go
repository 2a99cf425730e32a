// Package integration holds the gateway's end-to-end test against the real
// parts: the Kafka publisher on an embedded broker, the Postgres projector
// and the readmodel.Reader. It is a package of its own so that the gateway's
// unit tests build even while those parts change.
package integration
