// Package placement is the placement scenario of `make bench`: how many
// placement decisions one processor makes per second for a zone of 1,000
// and 10,000 hosts, per planner.
//
// BenchmarkDecide measures the planner and the planning manager alone: the
// pure machine's Step in a loop over a zone kept at a steady fill (each new
// VM releases the one placed a zone's worth of VMs earlier, and that release
// is counted in the time). BenchmarkRuntime sends N PlaceVm records through
// the real runtime on an embedded kfake broker and waits for N decisions on
// vm.signals.v1: decoding, stepping, encoding the zone's changelog record
// and the Kafka transactions included.
//
// Both report ns/decision and decisions/s; the target (docs/design.md §12 and
// issue 5) is 5,000 decisions/s at 10,000 hosts for FirstFitPlanner.
package placement
