// Package durability holds the durability scenario of `make bench`: what
// the embedded broker's synced writes cost. With a data directory,
// internal/kafka.StartBroker fsyncs every batch before it answers the
// produce (kfake SyncWrites), so that an acknowledged record survives a
// power loss; the dev stack and `vmplane broker` run it so.
//
// Each repetition starts three fresh brokers, one after the other: in
// memory, a data directory without sync, and a data directory with sync.
// Each takes the same three loads: one acks=all produce awaited at a time
// (what the gateway and the agent pay per command or answer), pipelined
// produce (a burst), and transactional commit rounds as a processor batch
// makes them. The in-memory broker's figures are the limits.
//
// It never judges a figure (the harness does) and never edits the code it
// measures.
package durability
