// Package host is the AgentManager of DESIGN §6: a pure state machine over
// one *schemas.HostRecord per host_id. It owns a host's registration, its
// agent status (Up, Disconnected, Removed, …) and admin resource state
// (Enabled, Disabled, …), the ping deadline, and which VMs the host last
// listed. Every change of what it publishes about a host goes out as a
// HostStatus on host.status.v1 and, keyed by zone, on placement.requests.v1
// and lease.commands.v1, so placement and leases see hosts in order.
//
// It never does I/O, never reads the clock, never places or moves a VM and
// never declares a host Down on a missed ping: a missed ping only makes a
// host Disconnected. Investigation of a disconnected host (neighbour checks,
// fencing, Alert, Down and HA signals) and maintenance (draining a host by
// migrations) come with the hosts issue; until then PrepareForMaintenance
// and CancelMaintenance are recorded as unsupported and change nothing.
package host
