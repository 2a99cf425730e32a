package vm

import (
	"maps"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// The two power reports a reconnect storm and the steady state are made of
// almost entirely, a stale one and one that repeats what the VM already is,
// are decided here before any deep copy: each changes only a few scalar
// fields and the host's report sequence, so the new state is a shallow copy
// that shares every untouched slice and map with the given one (neither is
// ever modified; every other path deep-copies before it changes anything).
// A VM that heard from its host only gets the host's shared sequence map
// for the round (reportseq.go), so the common report allocates nothing but
// the copy of the record, which the contract of Step needs; under the
// runtime (StepReusing) it changes the given record instead and allocates
// nothing at all.
// The result is exactly what the general path (step) returns for them,
// which TestQuickReportMatchesStep checks. The path stays while it pays:
// on the general path the same report takes ten allocations, not one
// (BenchmarkSameStateReport).

// quickReport decides r for s when it is stale or a same-state report of a
// VM with no job on the host it is placed on; ok is false for every other
// report, which the general path decides. With reuse the new state is s
// itself, changed (the runtime's StepReusing); else a shallow copy and s
// stays as it was.
func (m *Machine) quickReport(s *schemas.VmRecord, key string, r *schemas.PowerReport, now time.Time, reuse bool) (next *schemas.VmRecord, out []schemas.Record, ok bool) {
	seqs := s.ReportSeq
	last, seen := seqs[r.HostID]
	if seen && r.ReportSeq <= last {
		c := into(s, reuse)
		c.StaleIgnored++
		return c, nil, true
	}
	if jobID(s) != "" || s.VmState == StateDeleted || r.HostID != s.HostID || rare(s).Twin != nil || r.ReportedAt < rare(s).ReportsAfter ||
		s.PowerState != r.PowerState || s.PowerHost != r.HostID || !consistent(s.VmState, r.PowerState) {
		return nil, nil, false
	}
	c := into(s, reuse)
	if len(seqs) == 0 || (seen && len(seqs) == 1) {
		// The report's host is the only one the VM heard from: the new
		// map is {host: seq}, which every VM of the host shares this round.
		c.ReportSeq = m.seqs.single(r.HostID, r.ReportSeq)
	} else {
		// A new map either way: the old one may be a round's shared map.
		c.ReportSeq = make(map[string]int64, len(seqs)+1)
		maps.Copy(c.ReportSeq, seqs)
		c.ReportSeq[r.HostID] = r.ReportSeq
	}
	ms := now.UnixMilli()
	c.PowerStateUpdateCount = saturatingInc(c.PowerStateUpdateCount)
	c.PowerStateUpdateTime = ms
	if c.PowerStateUpdateCount <= m.cfg.PowerStateUpdateLimit {
		out = []schemas.Record{{Topic: schemas.TopicVmEvents, Key: key,
			Value: &schemas.PowerStateObserved{VmID: c.VmID, HostID: r.HostID, PowerState: r.PowerState, Count: c.PowerStateUpdateCount, At: ms}}}
	}
	return c, out, true
}

// into is the record a quick decision writes: s itself with reuse, else a
// shallow copy of it.
func into(s *schemas.VmRecord, reuse bool) *schemas.VmRecord {
	if reuse {
		return s
	}
	c := *s
	return &c
}
