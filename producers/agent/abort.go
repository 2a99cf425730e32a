package agent

import (
	"context"
	"errors"
	"sync"

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
// it, and the aborts read before their MigrateVm ran. An abort is carried
// out on the poll loop, never queued behind the migration it stops (the
// pool runs a VM's commands one after another).
type aborts struct {
	mu      sync.Mutex
	running map[string]context.CancelFunc // MigrateVm command id → its cancel
	early   map[string]bool               // MigrateVm command ids aborted before they ran
}

// start begins the migration of MigrateVm id: it returns the context to run
// it in and the function to call when it returns, or aborted when an abort
// came first (it must not run).
func (x *aborts) start(ctx context.Context, id string) (run context.Context, end func(), aborted bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.early[id] {
		delete(x.early, id)
		return nil, nil, true
	}
	run, cancel := context.WithCancel(ctx)
	if x.running == nil {
		x.running = map[string]context.CancelFunc{}
	}
	x.running[id] = cancel
	return run, func() {
		x.mu.Lock()
		delete(x.running, id)
		x.mu.Unlock()
		cancel()
	}, false
}

// abort stops the migration of MigrateVm id if it runs, and keeps it from
// starting if it has not yet; it reports whether it was running.
func (x *aborts) abort(id string) (running bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if cancel, ok := x.running[id]; ok {
		cancel()
		return true
	}
	if x.early == nil {
		x.early = map[string]bool{}
	}
	x.early[id] = true
	return false
}

// abortMigration carries out an AbortMigrateVm for host h at once and
// answers it: ok when it stopped a migration in flight or kept one from
// starting; failed when the MigrateVm had been answered already.
func (a *Agent) abortMigration(ctx context.Context, h *hostState, rec schemas.Record, cmd *schemas.AgentCommand, ab *schemas.AbortMigrateVm, finish func()) {
	if prev, ok := h.answers.get(cmd.CommandID); ok {
		a.answerAgain(ctx, prev, cmd, finish)
		return
	}
	var err error
	if _, answered := h.answers.get(ab.MigrateCommandID); answered {
		err = errors.New(errMigrationEnded)
	} else {
		running := a.aborts.abort(ab.MigrateCommandID)
		a.log.InfoContext(ctx, "live migration aborted", "host", cmd.HostID, "vm", cmd.VmID, "migration", ab.MigrateCommandID, "running", running)
	}
	answer, out := a.answer(h, h, rec, cmd, err, false)
	a.keepAndSend(ctx, answer, out, finish)
}
