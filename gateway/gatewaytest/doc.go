// Package gatewaytest holds test doubles for the gateway's two edges, for
// the tests of the gateway and of its clients (vmctl): an in-memory
// ReadModel, a Publisher that records what it was given, and an
// Idempotency-Key store whose kept answers a test can read: each
// implements the interface package gateway declares, with the rows of
// package readmodel. Integration tests use the real readmodel.Reader and
// Kafka publisher instead; nothing outside tests imports this package.
package gatewaytest
