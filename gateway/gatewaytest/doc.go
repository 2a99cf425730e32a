// Package gatewaytest holds test doubles for the gateway's two edges, for
// the tests of the gateway and of its clients (vmctl): an in-memory
// ReadModel, a Publisher that records what it was given, and an
// Idempotency-Key store whose kept answers a test can read. Integration
// tests use the real postgres.Reader and Kafka publisher instead; nothing
// outside tests imports this package.
package gatewaytest
