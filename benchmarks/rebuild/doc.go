// Package rebuild holds the rebuild scenario of `make bench`: a realistic
// log of vmplane's events (a fleet's hosts, deploys, steps, power changes,
// jobs and terminations, written by the package's own generator into an
// embedded kfake broker) replayed by the Postgres projector's Rebuild into
// an empty read model, beside the limit measured in the same run: COPY of
// the rows that replay left behind into the same empty tables.
//
// It never judges a figure (the harness does) and never edits the code it
// measures.
package rebuild
