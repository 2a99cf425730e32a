// Package host is the AgentManager of docs/design.md §6: a pure state machine over
// one *schemas.HostRecord per host_id. It owns a host's registration, its
// agent status (Up, Disconnected, Down, Alert, Removed, …) and admin
// resource state (Enabled, Disabled, PrepareForMaintenance, Maintenance,
// ErrorInMaintenance), the ping deadline, the investigation of a silent
// host, the draining of a host for maintenance, and which VMs the host last
// listed. Every change of what it publishes about a host goes out as a
// HostStatus on host.status.v1 and, keyed by zone, on placement.requests.v1
// and lease.commands.v1, so placement and leases see hosts in order.
//
// A missed ping makes a host Disconnected and opens an investigation
// (investigate.go): investigators are asked in turn through agent commands
// and answer Up, Down or Unknown. Only a definitive Down — by construction
// only a fenced host — makes a host Down and sends HostDown to its VMs;
// when every investigator says Unknown the host turns Alert and no VM is
// ever restarted; an agent's goodbye starts the same clocks as its silence.
// Maintenance (maintenance.go) fans out internal Migrate commands and joins
// their ends, which Relay (relay.go) brings back from vm.events.v1 keyed by
// host; the maintenance is a job of its own (drainjob.go). What an operator
// must hear of is an alert (alerts.go). An admin adds hosts, removes them
// and takes them out of vmplane's hands (Unmanaged) in admin.go.
//
// It never does I/O, never reads the clock and never places or moves a VM
// itself: moving is the VM processor's job, on the commands sent here.
package host
