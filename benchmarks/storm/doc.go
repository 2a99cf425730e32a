// Package storm holds the scenarios of `make bench` that run the VM
// pipeline end to end: the reconnect storm (every VM of every sim host
// reports at once) and the steady state (the same VMs reporting every ping
// interval). The load is the project's own sim agent; the records go
// through kfake, the VM processor on the real runtime with transactions
// (in a child process, so that its CPU time is its own) and the Postgres
// projector into a fresh database. Beside each figure it measures its
// limit in the same run: the same encoded records produced and consumed
// raw through kfake, and the same records through the runtime with a null
// machine (engine.Config.SkipDecode).
//
// It never judges a figure (the harness does) and never edits the code it
// measures.
package storm
