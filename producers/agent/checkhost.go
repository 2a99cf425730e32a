package agent

import (
	"context"
	"errors"

	"github.com/vmplane/vmplane/schemas"
)

// Investigation verdicts, as CheckHostAnswer.Result carries them.
const (
	resultUp      = "Up"
	resultDown    = "Down"
	resultUnknown = "Unknown"
)

// HostChecker is a driver that can look at one of its hosts from another:
// the host processor's neighbour and VM-activity investigators.
type HostChecker interface {
	// CheckHost looks at targetHostID from fromHostID. method is
	// "neighbour" (can from reach target) or "vm-activity" (do vmIDs still
	// show activity on shared storage). The result is Up or Unknown, never
	// Down: a host that cannot be reached or shows no activity may still run
	// its VMs behind a cut cable. detail says what was seen.
	CheckHost(ctx context.Context, fromHostID, targetHostID, method string, vmIDs []string) (result, detail string, err error)
}

// Fencer is a driver with a fencing device (IPMI, a PDU) for its hosts.
type Fencer interface {
	// Fence powers targetHostID off through its fencing device, reached from
	// fromHostID. A nil error means the target is off for sure.
	Fence(ctx context.Context, fromHostID, targetHostID string) error
}

// investigate serves CheckHost and FenceHost, which are addressed by
// cluster rather than by host: the command is keyed by the target, whose
// own agent may be gone, and whichever agent serves another live host of
// the cluster answers for it. It reports whether rec was one of them, and
// then calls finish once it is answered or skipped.
func (a *Agent) investigate(ctx context.Context, p *pool, rec schemas.Record, finish func()) bool {
	var (
		cmd     *schemas.AgentCommand
		target  string
		cluster string
	)
	switch c := rec.Value.(type) {
	case *schemas.CheckHost:
		cmd, target, cluster = &c.AgentCommand, c.TargetHostID, c.ClusterID
	case *schemas.FenceHost:
		cmd, target, cluster = &c.AgentCommand, c.TargetHostID, c.ClusterID
	default:
		return false
	}
	if cmd.Expired(a.cfg.Clock().UnixMilli()) {
		// The investigation has moved on; a fencing now could power off
		// a host that came back since.
		a.log.Info("expired investigation skipped", "target", target, "command", cmd.CommandID)
		finish()
		return true
	}
	from := a.neighbour(target, cluster)
	if from == nil {
		finish()
		return true // no live host of ours in the cluster: not ours to answer
	}
	p.submit(ctx, job{key: cmd.CommandID, run: func(ctx context.Context, done func()) {
		a.answerInvestigation(ctx, from, rec, cmd, target)
		done()
	}, done: finish})
	return true
}

// neighbour returns a host of ours in cluster, other than target, that is
// connected and reachable right now; nil if there is none.
func (a *Agent) neighbour(target, cluster string) *hostState {
	for _, id := range a.order {
		h := a.hosts[id]
		if id == target || h.info.Cluster != cluster || !h.connected.Load() || h.rejected.Load() {
			continue
		}
		if _, err := a.drv.PowerStates(id); err == nil {
			return h
		}
	}
	return nil
}

// answerInvestigation runs a check or a fencing from host from and answers
// on host.events.v1, keyed by the target. Checks are reads and fencing an
// already fenced host changes nothing, so a repeated command simply runs
// again; no answer is cached.
func (a *Agent) answerInvestigation(ctx context.Context, from *hostState, rec schemas.Record, cmd *schemas.AgentCommand, target string) {
	result, detail := Investigate(ctx, a.drv, rec.Value, from.info.ID, target)
	if errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	ans := schemas.Record{Topic: schemas.TopicHostEvents, Key: target, Headers: answerHeaders(rec, cmd), Value: &schemas.CheckHostAnswer{
		CommandID: cmd.CommandID, HostID: from.info.ID, TargetHostID: target, Result: result, Detail: schemas.CleanText(detail), At: a.cfg.Clock().UnixMilli()}}
	a.log.Info("investigation answered", "target", target, "from", from.info.ID, "type", schemas.TypeName(rec.Value), "result", result, "detail", detail)
	if err := a.produce(ctx, ans); err != nil {
		a.log.Warn("investigation answer not sent", "command", cmd.CommandID, "err", err)
	}
}

// Investigate carries out a CheckHost or a FenceHost from host from
// against target on a driver, as every agent does, and returns the
// answer's verdict (Up, Down or Unknown) and what was seen. A check is
// never Down (see HostChecker); a fencing that succeeded is.
func Investigate(ctx context.Context, d Driver, v any, from, target string) (result, detail string) {
	result = resultUnknown
	switch c := v.(type) {
	case *schemas.CheckHost:
		hc, ok := d.(HostChecker)
		if !ok {
			return result, "driver cannot check hosts"
		}
		r, seen, err := hc.CheckHost(ctx, from, target, c.Method, c.VmIDs)
		switch {
		case err != nil:
			return result, err.Error()
		case r == resultUp:
			return resultUp, seen
		}
		return result, seen // never Down from a check: see HostChecker
	case *schemas.FenceHost:
		f, ok := d.(Fencer)
		if !ok {
			return result, "driver has no fencing device"
		}
		if err := f.Fence(ctx, from, target); err != nil {
			return result, "fencing failed: " + err.Error()
		}
		return resultDown, "fenced from " + from
	}
	return result, ""
}
