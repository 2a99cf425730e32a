package qemu

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Adoption: guests outlive the agent that started them, so a driver that
// starts looks under Config.Dir for what runs there and takes it as its own
// before its first report round, which then tells the control plane the
// truth — what runs, paused or not, and what is defined but stopped. The
// control plane (the VM processor) decides what to do with a guest no VM
// claims; the driver reports it and never kills it to tidy up.
//
// A directory belongs to the host its record (record.go) names: one of
// another driver's hosts is left alone, a directory without a record (a
// start that crashed before writing it) too. A guest whose process is gone
// keeps its directory and disk, reported off, for a later Start.

// adoptWait bounds how long adopting one VM waits for its lock, held by a
// live agent starting it.
const adoptWait = 10 * time.Second

// monitorWait bounds the wait for a found guest's monitor.
const monitorWait = 2 * time.Second

// adopt takes every guest of the driver's hosts found under Config.Dir.
func (d *Driver) adopt() {
	entries, err := os.ReadDir(d.cfg.Dir)
	if err != nil {
		d.cfg.Logger.Warn("qemu: guests not adopted", "dir", d.cfg.Dir, "err", err)
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, e := range entries {
		if !e.IsDir() || !validID(e.Name()) {
			continue // not a guest's directory
		}
		dir := filepath.Join(d.cfg.Dir, e.Name())
		r, err := readRecord(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			d.cfg.Logger.Warn("qemu: guest directory not adopted", "dir", dir, "err", err)
			continue
		}
		if _, ok := d.hosts[r.Host]; !ok {
			continue // another driver's
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.adoptOne(dir, r)
		}()
	}
	wg.Wait()
}

// adoptOne takes the VM in dir, described by r.
func (d *Driver) adoptOne(dir string, r record) {
	ctx, cancel := context.WithTimeout(context.Background(), adoptWait)
	defer cancel()
	unlock, err := lockVM(ctx, dir)
	if err != nil {
		d.cfg.Logger.Warn("qemu: guest not adopted yet", "dir", dir, "err", err)
		return
	}
	defer unlock()
	g := guestOf(dir, r)
	d.mu.Lock()
	_, known := d.vms[g.id]
	d.mu.Unlock()
	if known {
		return // a call took it while we waited for the lock
	}
	if err := d.reconcile(ctx, g); err != nil {
		d.cfg.Logger.Warn("qemu: guest adopted, record not updated", "vm", g.id, "err", err)
	}
	d.mu.Lock()
	d.vms[g.id] = g
	power, host, pid := g.power(), g.host, 0
	if g.proc != nil {
		pid = g.proc.pid
	}
	d.mu.Unlock()
	d.cfg.Logger.Info("qemu: guest adopted", "vm", g.id, "host", host, "power", power, "pid", pid)
}

// reconcile makes g's process the QEMU that really runs the VM, read from
// its pid files rather than from memory; the VM's lock is held.
//
// One process is the rule. More is what a migration or suspend leaves when
// its agent dies half-way: QEMU goes on migrating alone, so every
// migration is cancelled (a finished one stays finished) and given a
// moment to end before one process is kept — preferably one holding the
// guest, on the host the record names. The others are quit when they hold
// no guest (a migration's source after it, a destination still waiting),
// and left running, unreported, with an error logged when they do: two
// running copies are for the control plane to fence, not for the driver
// to guess between.
func (d *Driver) reconcile(ctx context.Context, g *guest) error {
	d.mu.Lock()
	tracked, host, suspended := g.proc, g.host, g.suspended
	d.mu.Unlock()
	procs := d.found(ctx, g, tracked)
	if len(procs) > 1 {
		for _, p := range procs {
			// A process that migrates nothing refuses; that is fine.
			_, _ = p.execute(ctx, "migrate_cancel", nil)
		}
		settle(ctx, procs)
	}
	kept := choose(procs, host)
	d.dropOthers(ctx, g, procs, kept)
	if kept != nil && suspended {
		kept = d.suspendedFound(ctx, g, kept)
	}
	d.mu.Lock()
	changed := suspended != g.suspended
	if kept != nil && kept.host != g.host {
		g.host = kept.host // a migration ended while no agent watched
		changed = true
	}
	g.proc = kept
	d.mu.Unlock()
	if !changed {
		return nil
	}
	if err := d.save(g); err != nil {
		return err
	}
	if suspended && !g.suspended {
		// Spent once the record no longer says suspended. Best effort: a
		// next Suspend writes it anew.
		_ = os.Remove(filepath.Join(g.dir, "state.bin"))
	}
	return nil
}

// found returns the live processes of the VM: tracked, when it still runs
// whatever became of its pid file, and any other a pid file of the
// driver's hosts names, watched from now on.
func (d *Driver) found(ctx context.Context, g *guest, tracked *process) []*process {
	live := d.livePids(g.dir)
	var procs []*process
	if tracked != nil && tracked.alive() {
		procs = append(procs, tracked)
		if live[tracked.host] == tracked.pid {
			delete(live, tracked.host)
		}
	}
	for h, pid := range live {
		if p := d.attach(g.id, g.dir, h, pid); p != nil {
			procs = append(procs, p)
		}
	}
	for _, p := range procs {
		// Instant but for a monitor another live agent still holds; the
		// state stays unknown then (the watch connects later), and a guest
		// in an unknown state is never started again.
		wctx, cancel := context.WithTimeout(ctx, monitorWait)
		if err := p.waitConnected(wctx); err != nil && p.alive() {
			d.cfg.Logger.Warn("qemu: guest found, state unknown for now", "vm", g.id, "host", p.host, "pid", p.pid, "err", err)
		}
		cancel()
	}
	return procs
}

// dropOthers deals with the processes not kept: quit when they hold no
// guest, released (left running, unwatched) with an error when they do.
func (d *Driver) dropOthers(ctx context.Context, g *guest, procs []*process, kept *process) {
	for _, p := range procs {
		switch {
		case p == kept || !p.alive():
		case p.holdsGuest():
			d.cfg.Logger.Error("qemu: vm runs twice; the copy not kept is left running and not reported",
				"vm", g.id, "kept_host", kept.host, "kept_pid", kept.pid, "other_host", p.host, "other_pid", p.pid)
			p.release()
		default:
			d.cfg.Logger.Warn("qemu: quitting what a migration left", "vm", g.id, "host", p.host, "pid", p.pid, "status", p.getStatus())
			d.quitLeftover(ctx, p)
		}
	}
}

// suspendedFound decides about a live process of a VM recorded suspended,
// and returns it when it is kept.
func (d *Driver) suspendedFound(ctx context.Context, g *guest, p *process) *process {
	if p.getStatus() == "running" {
		// Resume had let it run: the saved memory is spent.
		d.setSuspended(g, false)
		return p
	}
	// Suspend had saved the memory and not quit yet, or Resume had not
	// let it run yet: state.bin holds the guest.
	d.cfg.Logger.Warn("qemu: quitting a suspended vm's process", "vm", g.id, "host", p.host, "pid", p.pid, "status", p.getStatus())
	d.quitLeftover(ctx, p)
	return nil
}

// settle waits (a few seconds at most) until no process of the VM waits for
// a migration stream that another has already sent: a finished migration's
// destination is about to run, and must not be taken for a remnant.
func settle(ctx context.Context, procs []*process) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		sent, waiting := false, false
		for _, p := range procs {
			if !p.alive() {
				continue
			}
			p.refresh(ctx, p.getStatus())
			switch p.getStatus() {
			case "postmigrate":
				sent = true
			case "inmigrate":
				waiting = true
			}
		}
		if !sent || !waiting || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// choose picks the process to keep: one holding the guest before one that
// does not, on host before another, then by host name.
func choose(procs []*process, host string) *process {
	live := slices.DeleteFunc(slices.Clone(procs), func(p *process) bool { return !p.alive() })
	slices.SortFunc(live, func(a, b *process) int {
		if a.holdsGuest() != b.holdsGuest() {
			if a.holdsGuest() {
				return -1
			}
			return 1
		}
		if (a.host == host) != (b.host == host) {
			if a.host == host {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.host, b.host)
	})
	if len(live) == 0 {
		return nil
	}
	return live[0]
}
