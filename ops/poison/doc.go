// Package poison holds the hostile-input test of every consumer: random
// and mutated records on every topic that a processor or a projector reads,
// against the real broker, Postgres and ClickHouse. A record that breaks the
// contract must become a dead letter or be applied; the test fails when any
// consumer stops moving past it (a stuck partition) or stops running.
//
// It owns no production code, and it never checks what a record means —
// the machines' own tests do that.
package poison
