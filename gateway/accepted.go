package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// Read-your-writes for the ids the gateway hands out (issue 28). A 202
// answers before the processor and the projector have seen its command, so
// for a moment the read model has no row for the VM a deploy makes, the
// job a command becomes or the lease a create makes, and a DELETE, an
// action, a cancel or a GET sent at once on the id just returned was a 404.
//
// So the gateway records each id it hands out, with its owning account and
// its first state, before it writes the command to the log, and every
// lookup by id (vm, job, lease below) falls back to that record when the
// read model has no row. The record is in Postgres (readmodel.Accepted,
// shared by every gateway and kept across their restarts) and the
// projector deletes it in the transaction that writes the resource's own
// row, which from then on answers. Who may see it is decided by its
// account exactly as for a projected row: another account's is a 404.
//
// Written before the log: a command the log refuses, or a gateway that
// dies in between, leaves a record of an id nobody was given (swept after
// acceptedTTL); a record that cannot be written is a 503 with nothing in
// the log. A command that follows such a lookup is keyed like the first
// (a VM's commands by its id, a lease's by its zone), so its processor
// reads it after the command that makes the resource.

// AcceptedStore keeps the resources handed out in a 202 until the
// projector has them (readmodel.Accepted in a running gateway). Get
// returns readmodel.ErrNotFound for an id never accepted or projected
// since.
type AcceptedStore interface {
	Put(ctx context.Context, rows ...readmodel.AcceptedRow) error
	Get(ctx context.Context, kind, id string) (readmodel.AcceptedRow, error)
}

// acceptedTTL is how long an accepted record is kept when the projector
// never deletes it: its command never reached the log, or the projector
// is that far behind (a lookup then finds nothing, as before issue 28).
const acceptedTTL = 24 * time.Hour

// First states, as the VM processor and the lease processor make them
// (docs/design.md §5.1, §8); the processors' own events replace them.
const (
	// vmBuilding is a VM a Deploy has made, placed nowhere yet.
	vmBuilding = "Building"
	// legacyStarting is CloudStack's name for a Building VM.
	legacyStarting = "Starting"
	leasePending   = "PENDING"
)

// vm reads a VM from the read model, or as its accepted deploy made it.
func (s *Server) vm(ctx context.Context, id string) (readmodel.VM, error) {
	return lookUp(ctx, s.accepted, readmodel.AcceptedVM, id, s.rm.VM)
}

// job reads a job from the read model, or as its accepted command made it.
func (s *Server) job(ctx context.Context, id string) (readmodel.Job, error) {
	return lookUp(ctx, s.accepted, readmodel.AcceptedJob, id, s.rm.Job)
}

// lookUp reads id with read and, when the read model has no row, the
// resource as it was accepted. The projector writes the row and deletes
// the accepted one in one transaction, which may commit between the two
// reads: a third read finds the row then.
func lookUp[T any](ctx context.Context, store AcceptedStore, kind, id string, read func(context.Context, string) (T, error)) (T, error) {
	v, err := read(ctx, id)
	if !errors.Is(err, readmodel.ErrNotFound) {
		return v, err
	}
	row, aerr := store.Get(ctx, kind, id)
	switch {
	case aerr == nil:
		var out T
		if err := json.Unmarshal(row.Body, &out); err != nil {
			return out, fmt.Errorf("decode accepted %s %s: %w", kind, id, err)
		}
		return out, nil
	case !errors.Is(aerr, readmodel.ErrNotFound):
		return v, aerr
	}
	return read(ctx, id)
}

// acceptCommand records what a command about to be written hands out:
// the job it becomes, when it is a VM command (a CancelJob answers with the
// job it cancels, which is no new one), and a Deploy's VM.
func (s *Server) acceptCommand(ctx context.Context, rec schemas.Record, job api.Job, now time.Time) error {
	cmd, ok := rec.Value.(schemas.VmCommandRecord)
	if !ok || cmd.Common().CommandID != job.ID {
		return nil
	}
	c := cmd.Common()
	// The row the projector makes of the command (sqlJobsFromCommands).
	rows := make([]readmodel.AcceptedRow, 0, 2)
	j := readmodel.Job{ID: job.ID, VmID: c.VmID, Account: c.Account, Type: job.Type, State: api.JobPending,
		Origin: c.Origin, CreatedAt: now, UpdatedAt: now}
	row, err := acceptedRow(readmodel.AcceptedJob, j.ID, j.Account, j, now)
	if err != nil {
		return err
	}
	rows = append(rows, row)
	if d, ok := rec.Value.(*schemas.Deploy); ok {
		vm := deployedVM(d, now)
		row, err := acceptedRow(readmodel.AcceptedVM, vm.ID, vm.Account, vm, now)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	return s.accept(ctx, rows...)
}

// deployedVM is the VM a Deploy makes, as it is before the processor has
// it: Building, on no host, its power unknown and its deploy the job in
// flight. Version -1 sets its ETag apart from every projected row's (an
// offset). It allows no action yet: the processor judges what comes (a
// Terminate cancels the deploy, another action queues behind it), as for
// a projected VM whose allowed actions the read model does not know.
func deployedVM(d *schemas.Deploy, now time.Time) readmodel.VM {
	return readmodel.VM{
		ID: d.VmID, Name: d.Name, Account: d.Account, ZoneID: d.ZoneID,
		Offering: d.Offering.Name, OfferingID: d.Offering.ID, CPU: d.Offering.CPU, MemoryMB: d.Offering.MemoryMB,
		// The processor's rule (processors/vm create): an HA offering
		// makes an HA VM whatever the deploy says.
		HA:      d.HA || d.Offering.HA,
		VmState: vmBuilding, PowerState: powerUnknown, LegacyState: legacyStarting,
		JobID: d.CommandID, Version: -1, CreatedAt: now, UpdatedAt: now,
	}
}

// acceptLease records a lease a create hands out, as it answers it.
func (s *Server) acceptLease(ctx context.Context, l readmodel.Lease) error {
	row, err := acceptedRow(readmodel.AcceptedLease, l.ID, l.Project, l, l.CreatedAt)
	if err != nil {
		return err
	}
	return s.accept(ctx, row)
}

func acceptedRow(kind, id, account string, v any, now time.Time) (readmodel.AcceptedRow, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return readmodel.AcceptedRow{}, fmt.Errorf("encode accepted %s %s: %w", kind, id, err)
	}
	return readmodel.AcceptedRow{Kind: kind, ID: id, Account: account, Body: body, At: now}, nil
}

// accept stores rows; a store that fails is a 503, and the command is not
// written.
func (s *Server) accept(ctx context.Context, rows ...readmodel.AcceptedRow) error {
	if err := s.accepted.Put(ctx, rows...); err != nil {
		s.log.Error("record accepted ids", "request_id", requestID(ctx), "err", err)
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the request could not be recorded; retry (request %s)", requestID(ctx))
	}
	return nil
}

// memoryAccepted is the in-process store: bounded, oldest out first. No
// projector deletes from it, and neither another gateway nor a restart
// sees it: it is for tests and a single process.
type memoryAccepted struct {
	max int

	mu    sync.Mutex
	rows  map[[2]string]readmodel.AcceptedRow
	order [][2]string
}

func newMemoryAccepted(max int) *memoryAccepted {
	return &memoryAccepted{max: max, rows: map[[2]string]readmodel.AcceptedRow{}}
}

func (m *memoryAccepted) Put(_ context.Context, rows ...readmodel.AcceptedRow) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rows {
		k := [2]string{r.Kind, r.ID}
		if _, ok := m.rows[k]; ok {
			continue
		}
		m.rows[k] = r
		m.order = append(m.order, k)
	}
	for len(m.rows) > m.max && len(m.order) > 0 {
		delete(m.rows, m.order[0])
		m.order = m.order[1:]
	}
	return nil
}

func (m *memoryAccepted) Get(_ context.Context, kind, id string) (readmodel.AcceptedRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[[2]string{kind, id}]
	if !ok {
		return readmodel.AcceptedRow{}, readmodel.ErrNotFound
	}
	return r, nil
}
