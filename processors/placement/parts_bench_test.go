package placement

import (
	"fmt"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// BenchmarkChangelogWrite measures what one transaction writes to the
// changelog for a batch of 50 records (25 decisions, each with the release
// of a VM placed a zone's worth earlier) in a zone of 10,000 hosts holding
// 320,000 VMs, as the Kafka placement scenario's: the zone whole, as
// before the parts, or its changed parts. The figures are bytes of keys
// and values per transaction, and the time to encode them.
func BenchmarkChangelogWrite(b *testing.B) {
	const hosts, perHost, batch = 10_000, 32, 50
	m := New(DefaultConfig())
	var z *schemas.ZoneRecord
	for i := range hosts {
		st := hostUp(fmt.Sprintf("h%05d", i), fmt.Sprintf("c%03d", i/500), 128, 1<<20)
		z, _ = m.Step(z, rec(st), t0)
	}
	live, next := hosts*perHost, 0
	step := func() {
		req := placeReq(fmt.Sprintf("r%d", next), fmt.Sprintf("vm%d", next), 1, 1024)
		req.Account = fmt.Sprintf("acct%d", next%10)
		z, _ = m.Step(z, rec(req), t0)
		if j := next - live; j >= 0 {
			z, _ = m.Step(z, rec(&schemas.ReleaseVm{RequestID: fmt.Sprintf("x%d", j), VmID: fmt.Sprintf("vm%d", j), ZoneID: "z1"}), t0)
		}
		next++
	}
	for range live {
		step()
	}
	m.AppendParts(nil, "z1", z, true)
	for _, whole := range []bool{true, false} {
		b.Run(fmt.Sprintf("whole=%v", whole), func(b *testing.B) {
			bytes := 0
			b.StopTimer()
			for range b.N {
				for range batch / 2 {
					step()
				}
				b.StartTimer()
				if whole {
					v, err := schemas.Marshal(z)
					if err != nil {
						b.Fatal(err)
					}
					bytes += len("z1") + len(v)
				} else {
					for _, p := range m.AppendParts(nil, "z1", z, false) {
						bytes += len(schemas.PartKey("z1", p.Name))
						if p.Value == nil {
							continue
						}
						v, err := schemas.Marshal(p.Value)
						if err != nil {
							b.Fatal(err)
						}
						bytes += len(v)
					}
				}
				b.StopTimer()
				if whole {
					m.AppendParts(nil, "z1", z, false)
				}
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes/txn")
		})
	}
}
