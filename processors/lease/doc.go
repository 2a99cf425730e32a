// Package lease is the lease processor of docs/design.md §8 (OpenStack Blazar's host
// reservations, resource monitoring and lease healing): a pure state machine
// over one *schemas.LeaseZoneRecord per zone_id. It owns, per zone, the
// leases and their reservations, the host calendar (which hosts each lease
// holds over which window), the latest host status table and which VMs of
// which account run on which host.
//
// Inputs (all keyed by zone, so co-partitioned):
//   - lease.commands.v1: CreateLease, UpdateLease, DeleteLease from the
//     gateway, and HostStatus copies from the host processor (push
//     monitoring: a host whose reservable turns false is healed at once);
//   - placement.events.v1: CapacityAllocated / CapacityReleased tell which
//     VM of which account runs on which host, and a release is how a lease
//     end learns that the Stop it sent has finished (a Stop releases the
//     VM's capacity); the VM job events are keyed by VM and out of reach.
//
// Outputs:
//   - lease.events.v1: LeaseStatusChanged for every lease and reservation
//     status or flag change (the notification, with the lease as it stands)
//     and LeaseHostChanged when a host turns reservable or stops being so;
//   - placement.requests.v1: a copy of LeaseStatusChanged whenever the set
//     of hosts the lease dedicates to its project changes (start, healing
//     swap, update, end). Placement holds a host for the lease's project
//     while the copy's status is ACTIVE or UPDATING and the reservation is
//     active, and frees every host of the lease otherwise;
//   - vm.commands.v1: Stop for the project's VMs on the lease's hosts at the
//     lease end (command id lease-<lease>-end-<vm>), and Migrate to the
//     replacement host for the project's VMs on a healed host that is still
//     Up (disabled or in maintenance; lease-<lease>-heal-<host>-<vm>). VMs
//     on a host that is down are restarted by HA (host processor), and
//     placement lands them on the lease's hosts, which are dedicated.
//
// Status machines (status.go) are explicit transition tables. A lease is
// PENDING until its start, STARTING while its hosts are checked, ACTIVE
// until its end, TERMINATING while the project's VMs stop (joined on their
// capacity release, with a deadline), TERMINATED at last. UPDATING and
// DELETING are the transient statuses of an update and a delete; ERROR is a
// lease whose hosts could not be found at creation. A failed update leaves
// the lease in its previous status with an update_failed notification
// (not ERROR for the whole lease: Blazar bug 1786031).
//
// The calendar is derived from the leases (calendar.go): every lease that
// is not terminal holds its reservations' hosts over [start, end). A host
// is chosen only when it is reservable in the status table, has the asked
// properties and is held by no other lease in an overlapping window, so no
// host is ever double-booked; one owner per zone steps every claim in order.
// Among the hosts that fit, allocation and healing take first the ones
// running no VM, then the ones running only the lease project's VMs, and
// never one that runs another project's VMs (from the VMs
// placement.events.v1 reports): dedication keeps other projects' new VMs
// off a lease host but never moves their old ones, so leasing such a host
// would lock its tenants out of it. A host that took another project's VM
// while its lease waited is swapped at the start when a free one exists.
//
// The lease policy (policy.go, Config.Policy; issue 23) bounds what one
// account holds in a zone: a lease is at most lease.max.length long, and
// the account's leases hold at most its quota of host-hours from now on
// (hosts times the hours left of each lease that has not ended). Where the
// quota allows fewer hosts than max_hosts but at least the minimums, the
// lease gets fewer, with a note; where it does not, or the lease is too
// long, the lease is refused like one with no room: ERROR, and a reason
// naming the limit, the account's usage and the quota. An admin's request
// (CreateLease/UpdateLease.Admin, set by the gateway) may exceed both; an
// update that does not lengthen a lease is never refused for what the
// lease already is. The quota is per zone because a zone is what one
// owner serializes; no zone's decision waits on another's.
//
// Monitoring: push (each HostStatus) and polling (Tick every
// lease.monitor.poll.interval, per zone, against the status table), both on
// by default. Healing (heal.go) covers leases active or starting within
// healing.window and does exactly the four cases of docs/design.md §8: a failed host
// is removed from its reservation and replaced when another is free; the
// flags degraded and missing_resources clear only on a successful update
// that gets the requested capacity, resources_changed never clears and
// keeps degraded set.
//
// The zone goes to its changelog in parts (parts.go; the runtime's
// engine.Parted): a header with the leases, a part per host and a part per
// VM with claims, each written when a step changed it, so a placement
// event writes one VM's claims rather than the zone. An index per zone
// finds hosts and claims by id and marks what it changes.
//
// The package never does I/O, never reads the clock, never uses randomness
// and never decides a host's health: a host is reservable only when the host
// processor says so. It never places a VM: placement enforces dedication.
package lease
