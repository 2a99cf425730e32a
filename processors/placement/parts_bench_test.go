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
	const batch = 50
	m, z, step := largeZone()
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

// largeZone is a zone of 10,000 hosts holding 320,000 VMs, and a step
// that places one more and releases the VM placed a zone's worth earlier.
func largeZone() (*Machine, *schemas.ZoneRecord, func()) {
	const hosts, perHost = 10_000, 32
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
	return m, z, step
}

// BenchmarkChangelogRestore measures what a restore of that zone costs
// past the broker: decoding its changelog records and making the zone,
// from one whole ZoneRecord or from its parts (assembled, as the engine
// hands them, in map order), and indexing it for the first decision.
func BenchmarkChangelogRestore(b *testing.B) {
	m, z, _ := largeZone()
	whole, err := schemas.Marshal(z)
	if err != nil {
		b.Fatal(err)
	}
	parts := map[string][]byte{}
	for _, p := range m.AppendParts(nil, "z1", z, true) {
		if parts[p.Name], err = schemas.Marshal(p.Value); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			v, err := schemas.Unmarshal(whole)
			if err != nil {
				b.Fatal(err)
			}
			New(DefaultConfig()).index(v.(*schemas.ZoneRecord))
		}
	})
	b.Run("parts", func(b *testing.B) {
		for b.Loop() {
			ps := make([]schemas.Part, 0, len(parts))
			for name, v := range parts {
				d, err := schemas.Unmarshal(v)
				if err != nil {
					b.Fatal(err)
				}
				ps = append(ps, schemas.Part{Name: name, Value: d})
			}
			m := New(DefaultConfig())
			z, err := m.Assemble("z1", ps)
			if err != nil {
				b.Fatal(err)
			}
			m.index(z)
		}
	})
}
