package lease

import (
	"fmt"
	"math"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// hourMs is an hour in the milliseconds leases are timed in.
const hourMs = int64(time.Hour / time.Millisecond)

// budget returns how many hosts lease l may hold in all under the policy
// (Config.Policy), or why it may have none: it is longer than the maximum,
// or its fewest hosts over what is left of its window would take its
// account past the quota. was is the lease before an update, nil for a
// create; an admin's request has no limit.
//
// An update never has to cure what the lease already is: one that does
// not lengthen the lease passes the length check, and one that does not
// lengthen what is left of its window may keep as many hosts as it holds,
// though the quota shrank or an admin made the lease.
func (t *tx) budget(l, was *schemas.LeaseRecord, admin bool) (int, error) {
	p := t.m.cfg.Policy
	if admin {
		return math.MaxInt32, nil
	}
	length := l.End - l.Start
	if p.MaxLength >= 0 && length > p.MaxLength.Milliseconds() && (was == nil || length > was.End-was.Start) {
		return 0, fmt.Errorf("the lease is %s long, over the maximum lease length of %s", span(length), span(p.MaxLength.Milliseconds()))
	}
	quota := p.quota(l.Project)
	if quota < 0 {
		return math.MaxInt32, nil
	}
	left := l.End - max(l.Start, t.now)
	used := t.usage(l.Project, l.LeaseID)
	most := 0
	if free := mulSat(quota, hourMs) - used; free > 0 {
		most = int(min(free/left, math.MaxInt32))
	}
	if was != nil && left <= was.End-max(was.Start, t.now) {
		most = max(most, hostCount(was))
	}
	need := 0
	for _, r := range l.Reservations {
		need += int(r.MinHosts)
	}
	if need > most {
		return 0, fmt.Errorf("over the lease quota of %s in zone %s: %d host-hours, of which its leases hold %s from now on; this lease needs at least %s more (%s for %s)",
			l.Project, t.z.ZoneID, quota, hours(used), hours(mulSat(int64(need), left)), plural(need, "host"), span(left))
	}
	return most, nil
}

// usage is the host time, in host-milliseconds, that project's leases
// other than except hold in the zone from now on: the quota's measure.
func (t *tx) usage(project, except string) int64 {
	var sum int64
	for i := range t.z.Leases {
		l := &t.z.Leases[i]
		if l.Project == project && l.LeaseID != except && holds(l.Status) && l.End > t.now {
			sum = addSat(sum, mulSat(int64(hostCount(l)), l.End-max(l.Start, t.now)))
		}
	}
	return sum
}

// hostCount is how many hosts the lease's reservations hold.
func hostCount(l *schemas.LeaseRecord) int {
	n := 0
	for _, r := range l.Reservations {
		n += len(r.Hosts)
	}
	return n
}

// mulSat and addSat work on non-negative host time and stop at the
// largest int64, so a lease written with an absurd end cannot wrap a sum
// into room under the quota.
func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// hours renders host-milliseconds as host-hours.
func hours(hostMs int64) string {
	return fmt.Sprintf("%.1f", float64(hostMs)/float64(hourMs))
}

// span renders a length in milliseconds as hours and minutes ("87600h",
// "1h30m"), the unit of the policy's settings.
func span(ms int64) string {
	h, m := ms/hourMs, ms%hourMs/60_000
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
