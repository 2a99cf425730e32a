// Package placement is the zone's capacity serializer (docs/design.md §7): a pure
// state machine over one *schemas.ZoneRecord per zone_id that owns the
// ledger of host capacity (with over-commit), the allocations of VMs to
// hosts and the planners' host reservations. Because one partition owner
// steps every claim of a zone in order, no host is ever double-booked.
//
// It consumes placement.requests.v1 (HostStatus copies from the host
// processor, PlaceVm, ReleaseVm, ResizeVm, LeaseStatusChanged) and produces
// PlacementDecided / PlacementFailed on vm.signals.v1 and the ledger changes
// on placement.events.v1. Its changelog holds each zone in parts, a host, a
// VM or a pool per record (parts.go), so a transaction writes what it
// changed, not the zone.
//
// Planners (planner.go and one file each) only order clusters and declare
// their resource usage; the planning manager (place.go) applies every filter
// (filters.go), host reservations (reservation.go), affinity groups
// (affinity.go) and lease dedications (lease.go). A VM holds two claims only
// while it moves: a PlaceVm that avoids a host the VM holds (migration) or a
// ResizeVm that does not fit in place keeps the old claim until ReleaseVm.
// A PlaceVm with adopt set (adopt.go) records a fact instead of asking: the
// VM runs on that host, so the claim is made there even over capacity and
// every other claim of the VM goes.
//
// It never does I/O, never reads the clock (time arrives as an argument),
// never uses randomness, and never decides a host's health: a host is
// reservable only when the host processor says so.
package placement
