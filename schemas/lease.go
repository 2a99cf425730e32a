package schemas

// ReservationSpec asks for hosts in a lease.
type ReservationSpec struct {
	MinHosts       int32             `avro:"min_hosts" doc:"Fewest hosts acceptable."`
	MaxHosts       int32             `avro:"max_hosts" doc:"Most hosts wanted."`
	HostProperties map[string]string `avro:"host_properties" doc:"Properties a host must have."`
}

// CreateLease reserves hosts in a zone over a time window.
type CreateLease struct {
	CommandID    string            `avro:"command_id" doc:"Unique command id."`
	LeaseID      string            `avro:"lease_id" doc:"Lease id."`
	ZoneID       string            `avro:"zone_id" doc:"Zone; also the record key."`
	Project      string            `avro:"project" doc:"Account that owns the lease."`
	Name         string            `avro:"name" doc:"Lease name."`
	Start        int64             `avro:"start" doc:"Start, Unix milliseconds."`
	End          int64             `avro:"end" doc:"End, Unix milliseconds."`
	Reservations []ReservationSpec `avro:"reservations" doc:"Host reservations."`
	IssuedAt     int64             `avro:"issued_at" doc:"Unix milliseconds."`
	Admin        bool              `avro:"admin" doc:"An admin asked: the lease may exceed the account's lease quota and the maximum lease length."`
	Caller       Caller            `avro:"caller" doc:"Who asked: account, API key and request id."`
}

// UpdateLease changes a lease's dates or host counts.
type UpdateLease struct {
	CommandID    string            `avro:"command_id" doc:"Unique command id."`
	LeaseID      string            `avro:"lease_id" doc:"Lease id."`
	ZoneID       string            `avro:"zone_id" doc:"Zone; also the record key."`
	Project      string            `avro:"project" doc:"Account asking."`
	Start        int64             `avro:"start" doc:"New start, Unix milliseconds; 0 keeps it."`
	End          int64             `avro:"end" doc:"New end, Unix milliseconds; 0 keeps it."`
	Reservations []ReservationSpec `avro:"reservations" doc:"New host reservations; empty keeps them."`
	IssuedAt     int64             `avro:"issued_at" doc:"Unix milliseconds."`
	Admin        bool              `avro:"admin" doc:"An admin asked: the lease may exceed the account's lease quota and the maximum lease length."`
	Caller       Caller            `avro:"caller" doc:"Who asked: account, API key and request id."`
}

// DeleteLease ends and removes a lease.
type DeleteLease struct {
	CommandID string `avro:"command_id" doc:"Unique command id."`
	LeaseID   string `avro:"lease_id" doc:"Lease id."`
	ZoneID    string `avro:"zone_id" doc:"Zone; also the record key."`
	Project   string `avro:"project" doc:"Account asking."`
	IssuedAt  int64  `avro:"issued_at" doc:"Unix milliseconds."`
	Caller    Caller `avro:"caller" doc:"Who asked: account, API key and request id."`
}

// Reservation is a lease's reservation as it stands.
type Reservation struct {
	ID               string            `avro:"id" doc:"Reservation id."`
	Status           string            `avro:"status" doc:"pending, active, deleted or error."`
	MinHosts         int32             `avro:"min_hosts" doc:"Fewest hosts acceptable."`
	MaxHosts         int32             `avro:"max_hosts" doc:"Most hosts wanted."`
	HostProperties   map[string]string `avro:"host_properties" doc:"Properties a host must have."`
	Hosts            []string          `avro:"hosts" doc:"Hosts allocated."`
	MissingResources bool              `avro:"missing_resources" doc:"Fewer hosts than asked for after healing."`
	ResourcesChanged bool              `avro:"resources_changed" doc:"Hosts of a started lease were swapped; never clears."`
}

// LeaseStatusChanged is a lease as it stands after any change (notification).
type LeaseStatusChanged struct {
	LeaseID      string        `avro:"lease_id" doc:"Lease id."`
	ZoneID       string        `avro:"zone_id" doc:"Zone; also the record key."`
	Project      string        `avro:"project" doc:"Owning account."`
	Name         string        `avro:"name" doc:"Lease name."`
	Status       string        `avro:"status" doc:"PENDING, STARTING, ACTIVE, TERMINATING, TERMINATED, ERROR, UPDATING, DELETING."`
	Degraded     bool          `avro:"degraded" doc:"Some reservation lacks or changed resources."`
	Start        int64         `avro:"start" doc:"Unix milliseconds."`
	End          int64         `avro:"end" doc:"Unix milliseconds."`
	Reservations []Reservation `avro:"reservations" doc:"Reservations."`
	Event        string        `avro:"event" doc:"What happened: created, started, healed, updated, update_failed, ended, deleted, ..."`
	Detail       string        `avro:"detail" doc:"Free text."`
	At           int64         `avro:"at" doc:"Unix milliseconds."`
	CommandID    string        `avro:"command_id" doc:"Command that caused the change; empty for timers and healing."`
	Reason       string        `avro:"reason" doc:"Why the lease is in ERROR, or why its end was incomplete."`
}

// LeaseHostChanged is the resource status notification of a lease zone: a
// host the lease processor knows turned reservable or stopped being so
// (Blazar's "resource status change"), with the leases it affects.
type LeaseHostChanged struct {
	ZoneID        string   `avro:"zone_id" doc:"Zone; also the record key."`
	HostID        string   `avro:"host_id" doc:"Host."`
	Reservable    bool     `avro:"reservable" doc:"Whether the host may be reserved now."`
	Status        string   `avro:"status" doc:"Agent status of the host."`
	ResourceState string   `avro:"resource_state" doc:"Admin resource state of the host."`
	Leases        []string `avro:"leases" doc:"Leases holding the host in a window that has not ended."`
	Reason        string   `avro:"reason" doc:"Why the host changed, as the host processor said."`
	At            int64    `avro:"at" doc:"Unix milliseconds."`
}

// LeaseZoneRecord is the lease processor's state of one zone (changelog
// lease.state.v1): the leases, the latest host status table and which VMs
// of which account run on which host.
type LeaseZoneRecord struct {
	ZoneID  string        `avro:"zone_id" doc:"Zone id."`
	Leases  []LeaseRecord `avro:"leases" doc:"Leases of the zone, terminal ones until their retention ends."`
	Hosts   []LeaseHost   `avro:"hosts" doc:"Latest status of each host of the zone."`
	Vms     []LeaseVm     `avro:"vms" doc:"VM allocations as placement reported them."`
	Handled []string      `avro:"handled" doc:"Latest command ids applied, for dedup."`
	PollAt  int64         `avro:"poll_at" doc:"Next periodic reconcile, Unix milliseconds; 0 for none."`
}

// The lease processor writes a zone to lease.state.v1 in parts
// (docs/design.md §7), as placement does, so that a transaction writes
// what its records changed rather than every VM of the zone:
// LeaseZoneHeader under the zone key, and under schemas.PartKey(zone,
// name) a LeaseZoneHost per host ("host:<host_id>") and a LeaseZoneVm per
// VM with claims ("vm:<vm_id>"). A LeaseZoneRecord under the zone key is a
// zone written whole, as before the parts.

// LeaseZoneHeader is what a zone's lease state holds besides its hosts and
// VMs.
type LeaseZoneHeader struct {
	ZoneID  string        `avro:"zone_id" doc:"Zone id."`
	Leases  []LeaseRecord `avro:"leases" doc:"Leases of the zone, terminal ones until their retention ends."`
	Handled []string      `avro:"handled" doc:"Latest command ids applied, for dedup."`
	PollAt  int64         `avro:"poll_at" doc:"Next periodic reconcile, Unix milliseconds; 0 for none."`
}

// LeaseZoneHost is one host of a zone's lease state.
type LeaseZoneHost struct {
	Host LeaseHost `avro:"host" doc:"The host's latest status."`
}

// LeaseZoneVm is one VM's claims in a zone's lease state.
type LeaseZoneVm struct {
	VmID   string    `avro:"vm_id" doc:"VM."`
	Claims []LeaseVm `avro:"claims" doc:"The VM's allocations as placement reported them (two while it moves)."`
}

// LeaseRecord is one lease in the lease processor's state.
type LeaseRecord struct {
	LeaseID      string        `avro:"lease_id" doc:"Lease id."`
	Project      string        `avro:"project" doc:"Owning account."`
	Name         string        `avro:"name" doc:"Lease name."`
	Status       string        `avro:"status" doc:"Lease status."`
	Degraded     bool          `avro:"degraded" doc:"Some reservation lacks or changed resources."`
	Start        int64         `avro:"start" doc:"Unix milliseconds."`
	End          int64         `avro:"end" doc:"Unix milliseconds."`
	Reservations []Reservation `avro:"reservations" doc:"Reservations with their hosts (the host calendar)."`
	Reason       string        `avro:"reason" doc:"Why the lease is in ERROR, or why its end was incomplete."`
	Dedicated    []string      `avro:"dedicated" doc:"Hosts placement was last told the lease dedicates to its project."`
	StopWait     []string      `avro:"stop_wait" doc:"VMs whose Stop the lease's end waits on (their capacity release)."`
	StopDeadline int64         `avro:"stop_deadline" doc:"When the end stops waiting, Unix milliseconds."`
	StopTotal    int32         `avro:"stop_total" doc:"How many VMs the end stops in all (its job's progress)."`
	CreatedAt    int64         `avro:"created_at" doc:"Unix milliseconds."`
	DoneAt       int64         `avro:"done_at" doc:"When the lease reached a terminal status, Unix milliseconds."`
}

// LeaseHost is one host in the lease processor's host status table.
type LeaseHost struct {
	HostID        string            `avro:"host_id" doc:"Host."`
	Status        string            `avro:"status" doc:"Agent status."`
	ResourceState string            `avro:"resource_state" doc:"Admin resource state."`
	Reservable    bool              `avro:"reservable" doc:"Up and Enabled."`
	Properties    map[string]string `avro:"properties" doc:"Host properties a reservation may ask for."`
	UpdatedAt     int64             `avro:"updated_at" doc:"Unix milliseconds."`
}

// LeaseVm is one VM allocation as placement reported it.
type LeaseVm struct {
	VmID    string `avro:"vm_id" doc:"VM."`
	HostID  string `avro:"host_id" doc:"Host."`
	Account string `avro:"account" doc:"Owning account."`
}
