package placement

import (
	"fmt"
	"os"
	"testing"
	"time"

	pl "github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/schemas"
)

// decisionsPerIteration keeps a figure meaningful under -benchtime=1x
// (what `make bench` runs).
const decisionsPerIteration = 20_000

func BenchmarkDecide(b *testing.B) {
	for _, hosts := range []int{1_000, 10_000} {
		for _, s := range schemas.Planners {
			b.Run(fmt.Sprintf("hosts=%d/%s", hosts, s.Name), func(b *testing.B) {
				benchDecide(b, hosts, s.Name, false)
			})
		}
		b.Run(fmt.Sprintf("hosts=%d/%s+storage", hosts, pl.FirstFitName), func(b *testing.B) {
			benchDecide(b, hosts, pl.FirstFitName, true)
		})
	}
	b.Run(fmt.Sprintf("hosts=%d/%s", largeZone, pl.FirstFitName), func(b *testing.B) {
		benchDecide(b, largeZone, pl.FirstFitName, false)
	})
}

// benchDecide fills a zone and times decisions. With storage, the zone has
// a pool per cluster and a zone-wide one, and eight /16 networks; every VM takes a root volume and a NIC, and gives them back
// with its host claim.
func benchDecide(b *testing.B, hosts int, planner string, storage bool) {
	const zone = "z1"
	failed := 0
	m := pl.New(pl.DefaultConfig())
	now := time.Unix(1_700_000_000, 0)
	var z *schemas.ZoneRecord
	for _, st := range hostStatuses(zone, hosts) {
		z, _ = m.Step(z, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: st}, now)
	}
	if storage {
		for _, v := range storageSetUp(zone, hosts) {
			z, _ = m.Step(z, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: v}, now)
		}
	}
	// Steady state: the zone holds live VMs, about half its CPU with
	// over-commit 4 (32 × 4 / 2 per host, halved).
	live, decisions := hosts*32, decisionsPerIteration
	// A dedicated planner claims whole hosts per account: ten accounts
	// fill ten hosts' worth, so the live set is smaller.
	if planner == pl.ImplicitDedicationName {
		live = hosts * 8
	}
	if os.Getenv(quickEnv) == "1" {
		live, decisions = hosts, 2_000
	}
	step := func(i int) {
		var out []schemas.Record
		req := placeVm(zone, planner, i)
		if storage {
			withVolumeAndNic(req, i)
		}
		z, out = m.Step(z, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: req}, now)
		if _, ok := out[len(out)-1].Value.(*schemas.PlacementFailed); ok {
			failed++
		}
		if j := i - live; j >= 0 {
			z, _ = m.Step(z, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: releaseVm(zone, j, storage)}, now)
		}
	}
	for i := range live {
		step(i)
	}
	next := live
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for range decisions {
			step(next)
			next++
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	n := float64(b.N * decisions)
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/decision")
	b.ReportMetric(n/elapsed.Seconds(), "decisions/s")
	if t := decideTarget(hosts, planner); t > 0 {
		b.ReportMetric(t, "target-decisions/s")
	}
	if failed > 0 {
		// The steady state leaves room for every VM: a failure is a bug.
		b.Fatalf("%d placements failed", failed)
	}
}
