package gateway

import (
	"context"

	"github.com/vmplane/vmplane/readmodel"
)

// The gateway reads the world through the interfaces below, declared here
// with only what it calls, as a scheduler declares the state it plans on:
// readmodel.Reader is the Postgres one (wired by ops/roles), and
// gatewaytest holds an in-memory one for the tests. The rows they return
// are the read model's (package readmodel).

// ReadModel is what every route reads. Account "" means every account
// (admin).
type ReadModel interface {
	VM(ctx context.Context, id string) (readmodel.VM, error)
	FilterVMs(ctx context.Context, f readmodel.VMFilter, p readmodel.Page) ([]readmodel.VM, error)
	Alerts(ctx context.Context, f readmodel.AlertFilter, p readmodel.Page) ([]readmodel.Alert, error)
	Alert(ctx context.Context, id string) (readmodel.Alert, error)
	Job(ctx context.Context, id string) (readmodel.Job, error)
	JobSteps(ctx context.Context, jobID string) ([]readmodel.JobStep, error)
	// JobSnapshot reads a job (nil when it has no row), its steps and the
	// projector's next offset of each partition of vm.events.v1 in one
	// snapshot: the rows hold exactly the events before that position.
	JobSnapshot(ctx context.Context, id string) (readmodel.JobSnapshot, error)
	// EventsPosition is the projector's next offset of each partition of
	// vm.events.v1.
	EventsPosition(ctx context.Context) (map[int32]int64, error)
	JobsByID(ctx context.Context, ids []string) ([]readmodel.Job, error)
	Jobs(ctx context.Context, f readmodel.JobFilter, p readmodel.Page) ([]readmodel.Job, error)
	Host(ctx context.Context, id string) (readmodel.Host, error)
	Hosts(ctx context.Context, p readmodel.Page) ([]readmodel.Host, error)
	Offering(ctx context.Context, idOrName string) (readmodel.Offering, error)
	Offerings(ctx context.Context) ([]readmodel.Offering, error)
	// Settings lists the values set for name (every setting when empty).
	Settings(ctx context.Context, name string) ([]readmodel.Setting, error)
	// OfferingVMs counts the VMs of an offering that are not expunged.
	OfferingVMs(ctx context.Context, offeringID string) (int, error)
	// Snapshots lists a VM's snapshots, oldest first.
	Snapshots(ctx context.Context, vmID string) ([]readmodel.Snapshot, error)
	APIKey(ctx context.Context, keyID string) (readmodel.APIKey, error)
	// Ready reports whether the database answers.
	Ready(ctx context.Context) error
	StorageReader
}

// StorageReader reads templates, storage pools, networks, and the volumes
// and NICs of VMs. Zone "" means every zone, account "" every account.
type StorageReader interface {
	Templates(ctx context.Context) ([]readmodel.Template, error)
	Template(ctx context.Context, idOrName string) (readmodel.Template, error)
	Pools(ctx context.Context, zoneID string) ([]readmodel.Pool, error)
	Pool(ctx context.Context, id string) (readmodel.Pool, error)
	Networks(ctx context.Context, zoneID string) ([]readmodel.Network, error)
	Network(ctx context.Context, zoneID, idOrName string) (readmodel.Network, error)
	Volumes(ctx context.Context, f readmodel.VolumeFilter, p readmodel.Page) ([]readmodel.Volume, error)
	Volume(ctx context.Context, id string) (readmodel.Volume, error)
	// VMStorage returns the volumes and NICs of the VMs of ids, by VM id.
	VMStorage(ctx context.Context, vmIDs []string) (map[string]readmodel.VMStorage, error)
}

// CapacityReader is what the gateway reads of the placement read models:
// a zone's capacity per cluster and a host's reservation and allocations.
// It is apart from ReadModel so that the placement views grow on their own.
type CapacityReader interface {
	ZoneCapacity(ctx context.Context, zoneID string) ([]readmodel.ClusterCapacity, error)
	HostPlacement(ctx context.Context, hostID string) (readmodel.HostPlacement, error)
}

// LeaseReader is what the gateway reads about leases. Project "" lists
// every project (admin).
type LeaseReader interface {
	Lease(ctx context.Context, id string) (readmodel.Lease, error)
	Leases(ctx context.Context, project string, p readmodel.Page) ([]readmodel.Lease, error)
	LeaseEvents(ctx context.Context, leaseID string, p readmodel.Page) ([]readmodel.LeaseEvent, error)
}

// AccountReader reads accounts and their keys (the account admin API). It
// is separate from ReadModel so that read models which do not hold
// accounts need not implement it.
type AccountReader interface {
	Account(ctx context.Context, id string) (readmodel.Account, error)
	Accounts(ctx context.Context, p readmodel.Page) ([]readmodel.Account, error)
	// APIKeys lists an account's keys, revoked ones included, by key id.
	APIKeys(ctx context.Context, account string, p readmodel.Page) ([]readmodel.APIKeyInfo, error)
}
