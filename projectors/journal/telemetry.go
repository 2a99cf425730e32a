package journal

import (
	"time"

	"github.com/vmplane/vmplane/internal/telemetry"
)

// inserted records an insert of r into ClickHouse that succeeded: rows per
// table, records per batch and the apply latency since start (retries
// included). The call site in projector.go is marked "telemetry:".
func (p *Projector) inserted(start time.Time, r *rows, records int) {
	for table, n := range map[string]int{"job_journal": len(r.jobs), "vm_events": len(r.events), "host_events": len(r.hosts), "lease_events": len(r.leases)} {
		if n > 0 {
			telemetry.ClickHouseBatchRows.With(table).Observe(float64(n))
		}
	}
	telemetry.ProjectorApplySeconds.With(p.cfg.Group).Observe(time.Since(start).Seconds())
	telemetry.ProjectorBatchRecords.With(p.cfg.Group).Observe(float64(records))
}

// LagSource reports the group's lag from its Kafka commits.
func (p *Projector) LagSource() telemetry.LagSource { return telemetry.LagSource{Group: p.cfg.Group} }
