// Package sim is the deterministic simulation of the whole control plane:
// the five processors (vm, host, host relay, placement, lease) wired as
// ops/roles wires them, over an in-memory log that keeps Kafka's
// guarantees and no more, with the sim driver's hosts, agents that speak
// the agent protocol, and clients that ask for anything at random. One
// goroutine, one seeded random source and one simulated clock run a world:
// the same seed gives the same run, step for step.
//
// Faults come from the seed: processors crash between any two steps and
// restore from their changelogs, transactions abort, agents crash with or
// without their answers, agent records are delayed, duplicated and
// reordered across partitions, hosts crash, partition, heal and flap, and
// the clock jumps. After every step the world checks the invariants of
// invariants.go; a violation names the seed, the step and the recent
// history. Once the faults stop, the world checks that every job ends in
// time, every host's status matches the truth and every claim and guest
// belongs to a VM placed where it is.
//
// sim owns the world and its checks, never a decision: what happens to a
// VM, a host, a zone or a lease is the machines' Step, the same code the
// processors run. It does no I/O: no broker, no database, no clock but its
// own.
package sim
