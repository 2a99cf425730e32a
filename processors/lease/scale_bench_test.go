package lease

import (
	"fmt"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// BenchmarkAllocationInLargeZone is what placement events cost the lease
// processor in a zone that already holds many VMs: the Steps of a
// CapacityAllocated and its release, and the changelog records of the
// parts they changed (changelog-B/op).
func BenchmarkAllocationInLargeZone(b *testing.B) {
	for _, vms := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("vms=%d", vms), func(b *testing.B) {
			m := New(DefaultConfig())
			var z *schemas.LeaseZoneRecord
			for h := range 1000 {
				z, _ = m.Step(z, rec(up(fmt.Sprintf("h%d", h), true)), t0)
			}
			event := func(v any) schemas.Record {
				return schemas.Record{Topic: schemas.TopicPlacementEvents, Key: zone, Value: v}
			}
			for i := range vms {
				z, _ = m.Step(z, event(&schemas.CapacityAllocated{ZoneID: zone, HostID: fmt.Sprintf("h%d", i%1000),
					VmID: fmt.Sprintf("vm-%08d", i), Account: fmt.Sprintf("acct-%d", i%50)}), t0)
			}
			m.AppendParts(nil, zone, z, true) // the restore's first write
			codec := schemas.NewCodec(nil)
			var buf []byte
			var parts []schemas.Part
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprintf("new-%d", i)
				z, _ = m.Step(z, event(&schemas.CapacityAllocated{ZoneID: zone, HostID: "h1", VmID: id, Account: "acct-1"}), t0)
				parts = m.AppendParts(parts[:0], zone, z, false)
				z, _ = m.Step(z, event(&schemas.CapacityReleased{ZoneID: zone, HostID: "h1", VmID: id}), t0)
				parts = m.AppendParts(parts, zone, z, false)
				buf = buf[:0]
				for _, p := range parts {
					buf = schemas.AppendPartKey(buf, zone, p.Name)
					if p.Value == nil {
						continue
					}
					var err error
					if buf, err = codec.AppendEncode(b.Context(), buf, p.Value); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(buf)), "changelog-B/op")
		})
	}
}
