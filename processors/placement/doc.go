// Package placement is the zone's capacity serializer (DESIGN §7): a pure
// state machine over one *schemas.ZoneRecord per zone_id that owns the
// ledger of host capacity (with over-commit), the allocations of VMs to
// hosts and the planners' host reservations. Because one partition owner
// steps every claim of a zone in order, no host is ever double-booked.
//
// It consumes placement.requests.v1 (HostStatus copies from the host
// processor, PlaceVm, ReleaseVm, ResizeVm, LeaseStatusChanged) and produces
// PlacementDecided / PlacementFailed on vm.signals.v1 and the ledger changes
// on placement.events.v1.
//
// It never does I/O, never reads the clock (time arrives as an argument),
// never uses randomness, and never decides a host's health: a host is
// reservable only when the host processor says so.
package placement
