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
// the copy of the record, which the contract of Step needs.
// The result is exactly what the general path (step) returns for them,
// which TestQuickReportMatchesStep checks. The path stays while it pays:
// on the general path the same report takes ten allocations, not one
// (BenchmarkSameStateReport).

// quickReport decides r for s when it is stale or a same-state report of a
// VM with no job on the host it is placed on; ok is false for every other
// report, which the general path decides.
func (m *Machine) quickReport(s *schemas.VmRecord, key string, r *schemas.PowerReport, now time.Time) (next *schemas.VmRecord, out []schemas.Record, ok bool) {
	last, seen := s.ReportSeq[r.HostID]
	if seen && r.ReportSeq <= last {
		c := *s
		c.StaleIgnored++
		return &c, nil, true
	}
	if jobID(s) != "" || s.VmState == StateDeleted || r.HostID != s.HostID || rare(s).Twin != nil || r.ReportedAt < rare(s).ReportsAfter ||
		s.PowerState != r.PowerState || s.PowerHost != r.HostID || !consistent(s.VmState, r.PowerState) {
		return nil, nil, false
	}
	c := *s
	if len(s.ReportSeq) == 0 || (seen && len(s.ReportSeq) == 1) {
		// The report's host is the only one the VM heard from: the new
		// map is {host: seq}, which every VM of the host shares this round.
		c.ReportSeq = m.seqs.single(r.HostID, r.ReportSeq)
	} else {
		c.ReportSeq = make(map[string]int64, len(s.ReportSeq)+1)
		maps.Copy(c.ReportSeq, s.ReportSeq)
		c.ReportSeq[r.HostID] = r.ReportSeq
	}
	ms := now.UnixMilli()
	c.PowerStateUpdateCount = saturatingInc(s.PowerStateUpdateCount)
	c.PowerStateUpdateTime = ms
	if c.PowerStateUpdateCount <= m.cfg.PowerStateUpdateLimit {
		out = []schemas.Record{{Topic: schemas.TopicVmEvents, Key: key,
			Value: &schemas.PowerStateObserved{VmID: c.VmID, HostID: r.HostID, PowerState: r.PowerState, Count: c.PowerStateUpdateCount, At: ms}}}
	}
	return &c, out, true
}
