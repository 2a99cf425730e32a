package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
)

// Migrate moves a running VM live between two hosts of this driver: QEMU
// on the destination waits on a local TCP port (-incoming), the source
// streams its memory there, and the source quits once the destination
// runs. The disk stays where it is (shared storage).
//
// The destination is a daemon like any guest, and the VM's lock is held
// throughout, so no Start sees the VM half-moved. The record names the
// destination once it runs and before the source quits; an agent dying in
// between leaves two processes, which the next one sorts out (reconcile).
func (d *Driver) Migrate(ctx context.Context, srcHostID, vmID, dstHostID string, spec agent.VMSpec) error {
	if _, ok := d.hosts[dstHostID]; !ok {
		return fmt.Errorf("migrate vm %s: host %s: %w", vmID, dstHostID, agent.ErrUnknownHost)
	}
	g, unlock, err := d.hold(ctx, srcHostID, vmID, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer unlock()
	src := d.procOf(g)
	if src == nil || !src.alive() {
		return fmt.Errorf("migrate: vm %s is not running", vmID)
	}
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("migrate vm %s: %w", vmID, err)
	}
	uri := "tcp:127.0.0.1:" + strconv.Itoa(port)
	d.mu.Lock()
	dst := &guest{id: g.id, host: dstHostID, spec: g.spec, dir: g.dir, rescued: g.rescued}
	d.mu.Unlock()
	if err := d.launch(ctx, dst, dstHostID, uri, src.pid); err != nil {
		return fmt.Errorf("migrate vm %s: destination: %w", vmID, err)
	}
	in := d.procOf(dst)
	// A migration stopped by its context (an AbortMigrateVm, a shutdown)
	// still quits its destination and lets the source run on.
	cleanup := context.WithoutCancel(ctx)
	if err := migrateTo(ctx, src, uri); err != nil {
		d.quitLeftover(cleanup, in)
		return fmt.Errorf("migrate vm %s to %s: %w", vmID, dstHostID, err)
	}
	// Completed: the guest's state is the destination's now, and an abort
	// can no longer take it back (resuming the source would run it from
	// older memory than what the destination may have written to disk).
	if err := waitIncoming(cleanup, in); err != nil {
		d.quitLeftover(cleanup, in)
		// Best effort: a source that does not run on is for the next
		// report to show.
		_, _ = src.execute(cleanup, "cont", nil)
		return fmt.Errorf("migrate vm %s to %s: %w", vmID, dstHostID, err)
	}
	ctx = cleanup
	in.refresh(ctx, "")
	if err := d.save(dst); err != nil {
		// The guest runs on dst all the same; whoever adopts it next
		// finds it there and corrects the record.
		d.cfg.Logger.Warn("qemu: record not moved with the vm", "vm", vmID, "host", dstHostID, "err", err)
	}
	d.mu.Lock()
	d.vms[vmID] = dst
	d.mu.Unlock()
	d.quitLeftover(ctx, src) // what a finished migration leaves holds no guest
	d.signal(srcHostID, vmID)
	return nil
}

// migrateTo streams the VM to uri and waits for the end.
func migrateTo(ctx context.Context, p *process, uri string) error {
	if _, err := p.execute(ctx, "migrate", map[string]any{"uri": uri}); err != nil {
		return err
	}
	for {
		ret, err := p.execute(ctx, "query-migrate", nil)
		if err != nil && ctx.Err() != nil {
			return stopMigration(p, ctx.Err())
		}
		if err != nil {
			return err
		}
		var st struct {
			Status    string `json:"status"`
			ErrorDesc string `json:"error-desc"`
		}
		if err := json.Unmarshal(ret, &st); err != nil {
			cancelMigration(p)
			return fmt.Errorf("query-migrate answer: %w", err)
		}
		switch st.Status {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("migration %s: %s", st.Status, st.ErrorDesc)
		}
		select {
		case <-ctx.Done():
			return stopMigration(p, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stopMigration cancels p's outgoing migration once its context ended,
// and returns why unless the migration had completed all the same (then
// nil: the guest is the destination's, and the caller finishes the move).
func stopMigration(p *process, why error) error {
	cancelMigration(p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ret, err := p.execute(ctx, "query-migrate", nil)
	var st struct {
		Status string `json:"status"`
	}
	if err == nil && json.Unmarshal(ret, &st) == nil && st.Status == "completed" {
		return nil
	}
	return why
}

// cancelMigration stops p's outgoing migration, at any time: the
// caller fails it. Best effort: one that goes on regardless feeds a
// destination that is quit, and reconcile cancels what an agent left.
func cancelMigration(p *process) {
	_, _ = p.execute(context.Background(), "migrate_cancel", nil)
}

// waitIncoming waits until a QEMU started with -incoming has loaded the
// stream: its status leaves inmigrate.
func waitIncoming(ctx context.Context, p *process) error {
	for {
		status, err := p.queryStatus(ctx)
		if err != nil {
			return err
		}
		if status != "inmigrate" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return errors.New("destination exited")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
