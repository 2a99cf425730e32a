// Package placement is the placement scenario of `make bench`: how many
// placement decisions one processor makes per second, per planner and zone
// size, and through Kafka.
//
// BenchmarkDecide measures the planner and the planning manager alone: the
// pure machine's Step in a loop over a zone kept at a steady fill (each new
// VM releases the one placed a zone's worth of VMs earlier, and that release
// is counted in the time), for zones of 1,000 and 10,000 hosts and, with
// FirstFit, 100,000. The Kafka rows (kafka.go) run the placement processor
// on the real runtime in a child process (child.go) over an embedded kfake
// broker, beside the same runtime with a null Step.
//
// Both report decisions/s; the targets are issue 31's (rows.go, kafka.go).
// It never judges a figure against another run: every limit is measured in
// the same run.
package placement
