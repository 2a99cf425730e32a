package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// errAborted answers a MigrateVm whose migration an AbortMigrateVm stopped
// (or kept from starting): the VM runs on at its source.
var errAborted = errors.New("migration aborted: its job was cancelled")

// Answers of an AbortMigrateVm that stopped nothing.
const (
	errMigrationEnded = "the migration had ended: the VM is where it went"
)

// aborts holds the agent's live migrations in flight, each with what stops
// it, those that ended and are not answered yet, and the aborts read
// before their MigrateVm ran. An abort is carried out on the poll loop,
// never queued behind the migration it stops (the pool runs a VM's
// commands one after another).
type aborts struct {
	mu      sync.Mutex
	running map[string]context.CancelFunc // MigrateVm command id → its cancel
	ended   map[string]bool               // ended, its answer not yet kept
	early   map[string]time.Time          // aborted before they ran, when
}

// earlyKept is how long an abort read before its MigrateVm waits for it:
// a MigrateVm comes right after its abort or not at all (its job has
// ended by its deadline, and a later one has another command id).
const earlyKept = time.Hour

// start begins the migration of MigrateVm id: it returns the context to run
// it in and the function to call once its answer is kept, or aborted when
// an abort came first (it must not run).
func (x *aborts) start(ctx context.Context, id string) (run context.Context, end func(), aborted bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.early[id]; ok {
		delete(x.early, id)
		return nil, nil, true
	}
	run, cancel := context.WithCancel(ctx)
	if x.running == nil {
		x.running, x.ended = map[string]context.CancelFunc{}, map[string]bool{}
	}
	x.running[id] = cancel
	return run, func() {
		x.mu.Lock()
		delete(x.running, id)
		delete(x.ended, id)
		x.mu.Unlock()
		cancel()
	}, false
}

// over records that the migration of id has returned from the driver:
// from now on an abort finds it ended, not stoppable.
func (x *aborts) over(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.running[id]; ok {
		x.ended[id] = true
	}
}

// abort stops the migration of MigrateVm id if it runs, and keeps it from
// starting if it has not yet. It reports whether it had ended (nothing was
// stopped or kept from starting).
func (x *aborts) abort(id string) (ended bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ended[id] {
		return true
	}
	if cancel, ok := x.running[id]; ok {
		cancel()
		return false
	}
	now := time.Now()
	if x.early == nil {
		x.early = map[string]time.Time{}
	}
	for k, at := range x.early {
		if now.Sub(at) > earlyKept {
			delete(x.early, k)
		}
	}
	x.early[id] = now
	return false
}

// abortMigration carries out an AbortMigrateVm for host h at once and
// answers it: ok when it stopped a migration in flight or kept one from
// starting; failed when the migration had ended (its MigrateVm answered,
// returned from the driver, or in the source's ledger as carried out). An abort read again is answered as the
// first time; if that answer was ok, its MigrateVm (read again after a
// restart, not answered) is kept from starting again.
func (a *Agent) abortMigration(ctx context.Context, h *hostState, rec schemas.Record, cmd *schemas.AgentCommand, ab *schemas.AbortMigrateVm, finish func()) {
	_, answered := h.answers.get(ab.MigrateCommandID)
	if prev, ok := h.answers.get(cmd.CommandID); ok {
		if ans, _ := prev.Value.(*schemas.AgentAnswer); ans != nil && ans.OK && !answered {
			a.aborts.abort(ab.MigrateCommandID)
		}
		a.answerAgain(ctx, prev, cmd, finish)
		return
	}
	var err error
	migrate := &schemas.AgentCommand{CommandID: ab.MigrateCommandID, HostID: cmd.HostID, VmID: cmd.VmID, Epoch: cmd.Epoch}
	if answered || doneBefore(a.drv, migrate) || a.aborts.abort(ab.MigrateCommandID) {
		err = errors.New(errMigrationEnded)
	}
	a.log.InfoContext(ctx, "live migration abort", "host", cmd.HostID, "vm", cmd.VmID, "migration", ab.MigrateCommandID, "stopped", err == nil)
	answer, out := a.answer(h, h, rec, cmd, err, false)
	a.keepAndSend(ctx, answer, out, finish)
}

// doneBefore says whether the source's ledger lists the MigrateVm cmd as
// carried out: an earlier delivery moved the VM, and its answer was lost
// with an agent restarted without its answers file.
func doneBefore(d Driver, cmd *schemas.AgentCommand) bool {
	l, err := d.Ledger(cmd.HostID, cmd.VmID)
	return err == nil && l.Epoch == cmd.Epoch && slices.Contains(l.Done, cmd.CommandID)
}
