package sim

import (
	"fmt"
	"slices"
	"strings"
)

// A family weights a run toward one of the races the scenario files hold
// against one machine at a time, so that many seeds play it with the whole
// system around it. The zero profile is the mix every other run plays.
type profile struct {
	// Fault weights.
	clockJump, procCrash, agentCrash, agentStop, hostFault, outOfBand int
	// hostKinds weights crash, partition, recover and heal.
	hostKinds [4]int
	// Client weights: repeats, deploys, VM actions, host admin, leases.
	repeat, deploy, action, admin, lease int
	// actions, when set, are the only VM actions the clients ask for.
	actions []string
	// allHA makes every deploy ask for HA.
	allHA bool
}

var mix = profile{clockJump: 1, procCrash: 1, agentCrash: 1, agentStop: 1, hostFault: 2, outOfBand: 1,
	hostKinds: [4]int{1, 1, 1, 1}, repeat: 5, deploy: 20, action: 55, admin: 10, lease: 10}

// families are the races of the scenario files, by name.
var families = map[string]struct {
	doc string
	p   profile
}{
	"split-brain": {"hosts cut off with their VMs still running (host/testdata/split_brain.txt): HA must never start them elsewhere",
		with(mix, func(p *profile) { p.hostFault, p.hostKinds, p.allHA = 6, [4]int{0, 3, 0, 2}, true })},
	"host-down-ha": {"hosts crashing and coming back under HA VMs (vm/testdata/ha.txt, ha_avoid.txt, hostdown_*.txt)",
		with(mix, func(p *profile) { p.hostFault, p.hostKinds, p.allHA = 6, [4]int{3, 0, 2, 1}, true })},
	"restart-storm": {"processors crashing and the clock jumping while agents ping (host/testdata/restart_storm.txt)",
		with(mix, func(p *profile) { p.procCrash, p.clockJump, p.hostFault = 5, 3, 0 })},
	"out-of-band": {"guests stopped and paused behind vmplane's back, apache/cloudstack#10406 (vm/testdata/races.txt, power.txt)",
		with(mix, func(p *profile) { p.outOfBand, p.allHA = 8, true })},
	"moves": {"migrations and resizes through agent delays, duplicates and crashes (vm/testdata/migrate*.txt, twin_*.txt, resize*.txt)",
		with(mix, func(p *profile) {
			p.actions = []string{"migrate", "resize", "confirm_resize", "revert_resize", "stop", "start"}
			p.agentCrash, p.agentStop = 3, 2
		})},
	"queue": {"many commands for few VMs, repeated ids and terminates (vm/testdata/queue.txt, duplicate.txt, terminate_*.txt)",
		with(mix, func(p *profile) { p.repeat, p.deploy, p.action = 20, 5, 70 })},
	"snapshots": {"snapshots taken, reverted and deleted, VMs terminated and recovered, through agent crashes (vm/testdata/snapshot*.txt, recover*.txt)",
		with(mix, func(p *profile) {
			p.actions = []string{"snapshot", "snapshot", "revert_snapshot", "delete_snapshot", "stop", "start", "migrate", "terminate", "recover"}
			p.agentCrash, p.hostFault = 3, 0
		})},
	"storage": {"volumes attached, grown, snapshotted, detached and deleted, pools filling and failing, NICs on small networks (vm/testdata/volume*.txt, placement/testdata/storage*.txt)",
		with(mix, func(p *profile) {
			p.actions = []string{"attach_volume", "attach_volume", "detach_volume", "resize_volume", "snapshot_volume", "delete_volume", "stop", "start", "migrate", "terminate", "recover"}
			p.deploy, p.admin = 30, 15
		})},
	"leases": {"leases created, updated and deleted while hosts fail (lease/testdata/heal_*.txt, lifecycle.txt)",
		with(mix, func(p *profile) { p.lease, p.hostKinds = 40, [4]int{2, 1, 2, 1} })},
}

func with(p profile, f func(*profile)) profile {
	f(&p)
	return p
}

// Families names the seed families, sorted.
func Families() []string {
	var out []string
	for name := range families {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// profileOf returns a family's profile; "" is the mix.
func profileOf(family string) (profile, error) {
	if family == "" {
		return mix, nil
	}
	f, ok := families[family]
	if !ok {
		return profile{}, fmt.Errorf("no seed family %q (have %s)", family, strings.Join(Families(), ", "))
	}
	return f.p, nil
}

// pick returns an index chosen by weight.
func (w *world) pick(weights ...int) int {
	total := 0
	for _, x := range weights {
		total += x
	}
	r := w.rng.IntN(max(total, 1))
	for i, x := range weights {
		if r < x {
			return i
		}
		r -= x
	}
	return len(weights) - 1
}
