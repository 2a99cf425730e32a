package agent

import (
	"context"
	"errors"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// reportLoop announces the hosts, then runs a report round every ping
// interval, and at once when the broker comes back after an outage.
func (a *Agent) reportLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.PingInterval)
	defer t.Stop()
	failures := 0
	for {
		if err := a.round(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			// Announce again once the broker takes records: the host
			// processor may have marked the hosts Disconnected meanwhile.
			for _, h := range a.hosts {
				h.connected.Store(false)
			}
			a.log.Warn("report round failed", "err", err)
			if !sleep(ctx, backoff(failures)) {
				return
			}
			failures++
			continue
		}
		failures = 0
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.reconnect:
			a.log.Info("broker reachable again, announcing hosts")
		}
	}
}

// round reports every host: AgentConnected first for a host not announced
// yet, then one PowerReport per VM and an AgentPing, all with the same new
// report_seq. An unreachable (crashed, partitioned) host is skipped, and
// announced again once it is back.
func (a *Agent) round(ctx context.Context) error {
	at := a.cfg.Clock().UnixMilli()
	var recs []schemas.Record
	var firstErr error
	// Hosts are produced in chunks so that a round over thousands of hosts
	// never holds all its records at once.
	const chunk = 2000
	for _, id := range a.order {
		h := a.hosts[id]
		if h.rejected.Load() {
			continue
		}
		seq := h.nextSeq()
		states, err := a.drv.PowerStates(id)
		if err != nil {
			if h.connected.Swap(false) || !errors.Is(err, ErrHostUnreachable) {
				a.log.Warn("host not reported", "host", id, "err", err)
			}
			continue
		}
		ids := SortedIDs(states)
		if !h.connected.Load() {
			recs = append(recs, a.connected(h, ids, at))
		}
		for _, vm := range ids {
			recs = append(recs, schemas.Record{Topic: schemas.TopicVmPower, Key: vm, Value: &schemas.PowerReport{
				VmID: vm, HostID: id, PowerState: states[vm], ReportSeq: seq, ReportedAt: at}})
		}
		recs = append(recs, schemas.Record{Topic: schemas.TopicHostEvents, Key: id, Value: &schemas.AgentPing{
			HostID: id, ReportSeq: seq, VmIDs: ids, At: at}})
		if len(recs) >= chunk {
			if err := a.produce(ctx, recs...); err != nil && firstErr == nil {
				firstErr = err
			}
			recs = recs[:0]
		}
		h.connected.Store(true)
	}
	if err := a.produce(ctx, recs...); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

func (a *Agent) connected(h *hostState, vmIDs []string, at int64) schemas.Record {
	a.log.Info("announcing host", "host", h.info.ID, "vms", len(vmIDs))
	return schemas.Record{Topic: schemas.TopicHostEvents, Key: h.info.ID, Value: Connected(a.cfg.ID, h.info, vmIDs, at)}
}

// changeLoop reports a VM at once when the driver saw its power change.
func (a *Agent) changeLoop(ctx context.Context) {
	changes := a.drv.Changes()
	for {
		select {
		case <-ctx.Done():
			return
		case c, ok := <-changes:
			if !ok {
				return
			}
			if err := a.reportVM(ctx, c.HostID, c.VmID); err != nil && ctx.Err() == nil {
				a.log.Warn("change not reported", "host", c.HostID, "vm", c.VmID, "err", err)
			}
		}
	}
}

// reportVM sends one PowerReport for a VM with a new report_seq of its
// host, and an AgentPing with the host's whole VM list under the same
// sequence: the host processor learns at once that a VM came or went, so a
// host that fails right after starting a VM still names it in its HostDown
// signals. A VM no longer on the host is reported PowerOff. Nothing is sent
// for a host not announced (the next round reports it) or rejected.
func (a *Agent) reportVM(ctx context.Context, hostID, vmID string) error {
	recs, ok := a.powerReport(hostID, vmID)
	if !ok {
		return nil
	}
	return a.produce(ctx, recs...)
}

func (a *Agent) powerReport(hostID, vmID string) ([]schemas.Record, bool) {
	h, ok := a.hosts[hostID]
	if !ok || h.rejected.Load() || !h.connected.Load() {
		return nil, false
	}
	seq := h.nextSeq()
	states, err := a.drv.PowerStates(hostID)
	if err != nil {
		return nil, false
	}
	state, ok := states[vmID]
	if !ok {
		state = schemas.PowerOff
	}
	at := a.cfg.Clock().UnixMilli()
	return []schemas.Record{
		{Topic: schemas.TopicVmPower, Key: vmID, Value: &schemas.PowerReport{
			VmID: vmID, HostID: hostID, PowerState: state, ReportSeq: seq, ReportedAt: at}},
		{Topic: schemas.TopicHostEvents, Key: hostID, Value: &schemas.AgentPing{
			HostID: hostID, ReportSeq: seq, VmIDs: SortedIDs(states), At: at}},
	}, true
}
