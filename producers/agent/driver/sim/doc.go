// Package sim is an in-memory hypervisor for the agent: thousands of hosts
// in one process with configurable latency and failure rates, plus controls
// (crash, partition, out-of-band power changes) for tests, benchmarks and the
// dev stack. It owns nothing but its own memory, and the state file that
// lets its hosts outlive the agent process when one is configured: it never
// talks to Kafka and knows nothing of jobs or epochs.
//
// It is kept lean on purpose (10,000 hosts × 50 VMs must fit in a few
// hundred MiB): a VM is a small struct in its host's slice, and no goroutine
// runs per host or per VM; latency is slept on the caller's goroutine.
package sim
