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
}

// DeleteLease ends and removes a lease.
type DeleteLease struct {
	CommandID string `avro:"command_id" doc:"Unique command id."`
	LeaseID   string `avro:"lease_id" doc:"Lease id."`
	ZoneID    string `avro:"zone_id" doc:"Zone; also the record key."`
	Project   string `avro:"project" doc:"Account asking."`
	IssuedAt  int64  `avro:"issued_at" doc:"Unix milliseconds."`
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
}
