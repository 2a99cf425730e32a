package crashloop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// kill is one entry of the kill schedule: planned from the seed, then
// filled in as it happens.
type kill struct {
	n       int
	planned time.Duration // after the load began
	role    string
	delay   time.Duration // from the kill to the restart

	mu          sync.Mutex
	at          time.Duration // when it happened, on the stack's clock
	pid         int
	done        bool
	skipped     string
	restartedAt time.Duration
	newPid      int
	recovery    time.Duration // from the restart until ready
	measured    bool
	note        string
}

func (k *kill) restarted(at time.Duration, pid int) {
	k.mu.Lock()
	k.restartedAt, k.newPid = at, pid
	k.mu.Unlock()
}

func (k *kill) recovered(d time.Duration) {
	k.mu.Lock()
	k.recovery, k.measured = d, true
	k.mu.Unlock()
}

func (k *kill) unmeasured(why string) {
	k.mu.Lock()
	k.note = why
	k.mu.Unlock()
}

// plan draws the kill schedule from the seed: at least minKills kills at
// uniform random moments of the load, each of a uniformly chosen role,
// each restarted after 0.1–2 s.
func plan(seed int64, load time.Duration, minKills int, roles []string) []*kill {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6b696c6c))
	n := minKills + rng.IntN(minKills/5+1)
	lo, hi := 2*time.Second, load-2*time.Second
	ks := make([]*kill, n)
	for i := range ks {
		ks[i] = &kill{
			planned: lo + time.Duration(rng.Int64N(int64(hi-lo))),
			role:    roles[rng.IntN(len(roles))],
			delay:   100*time.Millisecond + time.Duration(rng.Int64N(int64(1900*time.Millisecond))),
		}
	}
	// Every run kills the broker, a few times: a uniform draw over eleven
	// roles leaves it out of one run in ten.
	for brokers(ks) < min(n, max(2, n/10)) {
		ks[rng.IntN(n)].role = "broker"
	}
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].planned < ks[j].planned })
	for i, k := range ks {
		k.n = i + 1
	}
	return ks
}

func brokers(ks []*kill) int {
	n := 0
	for _, k := range ks {
		if k.role == "broker" {
			n++
		}
	}
	return n
}

// planText is the schedule as planned, for the start of the output.
func planText(ks []*kill) string {
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "  #%-3d +%7.2fs  %-22s restart after %.2fs\n", k.n, k.planned.Seconds(), k.role, k.delay.Seconds())
	}
	return b.String()
}

// killer carries out the schedule from began until ctx ends. A role that
// is down (restarting after an earlier kill or an exit of its own) is
// waited for, up to 10 s, then the kill is skipped.
func killer(ctx context.Context, st *stack, ks []*kill, began time.Time) {
	for _, k := range ks {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(began.Add(k.planned))):
		}
		r := st.byName[k.role]
		wait := time.Now().Add(10 * time.Second)
		for {
			if pid, ok := r.kill(k, k.delay); ok {
				k.mu.Lock()
				k.at, k.pid, k.done = st.clock(), pid, true
				k.mu.Unlock()
				st.logf("kill #%d at %s: %s pid %d (restart after %.2fs)", k.n, st.clock().Round(time.Millisecond), k.role, pid, k.delay.Seconds())
				break
			}
			if time.Now().After(wait) || ctx.Err() != nil {
				k.mu.Lock()
				k.skipped = "not running for 10 s"
				k.mu.Unlock()
				st.logf("kill #%d skipped: %s is not running", k.n, k.role)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// scheduleText is the schedule as carried out: time, role, pid killed,
// restart, the new pid and how long until it answered ready.
func scheduleText(ks []*kill) string {
	var b strings.Builder
	for _, k := range ks {
		k.mu.Lock()
		switch {
		case k.skipped != "":
			fmt.Fprintf(&b, "  #%-3d %-22s skipped (%s)\n", k.n, k.role, k.skipped)
		case !k.done:
			fmt.Fprintf(&b, "  #%-3d %-22s not reached (planned +%.2fs)\n", k.n, k.role, k.planned.Seconds())
		default:
			rec := "recovery not measured"
			if k.measured {
				rec = fmt.Sprintf("ready %.2fs after restart", k.recovery.Seconds())
			} else if k.note != "" {
				rec = k.note
			}
			fmt.Fprintf(&b, "  #%-3d at %7.2fs %-22s pid %-7d restarted at %7.2fs as pid %-7d %s\n",
				k.n, k.at.Seconds(), k.role, k.pid, k.restartedAt.Seconds(), k.newPid, rec)
		}
		k.mu.Unlock()
	}
	return b.String()
}

// killStats sums the schedule up: kills done, per role, and the recovery
// times (p50 and max) of those measured.
type killStats struct {
	done, skipped, unmeasured int
	perRole                   map[string]int
	recoveries                []time.Duration
	byRole                    map[string][]time.Duration
	worst                     string
}

func statsOf(ks []*kill) killStats {
	s := killStats{perRole: map[string]int{}, byRole: map[string][]time.Duration{}}
	var worst time.Duration
	for _, k := range ks {
		k.mu.Lock()
		switch {
		case k.skipped != "":
			s.skipped++
		case k.done:
			s.done++
			s.perRole[k.role]++
			if k.measured {
				s.recoveries = append(s.recoveries, k.recovery)
				s.byRole[k.role] = append(s.byRole[k.role], k.recovery)
				if k.recovery > worst {
					worst, s.worst = k.recovery, fmt.Sprintf("#%d %s", k.n, k.role)
				}
			} else {
				s.unmeasured++
			}
		}
		k.mu.Unlock()
	}
	slices.Sort(s.recoveries)
	for _, rs := range s.byRole {
		slices.Sort(rs)
	}
	return s
}

// roleRecoveries is each role's recovery, p50 and max of those measured.
func (s killStats) roleRecoveries() string {
	var parts []string
	for _, n := range sortedKeys(s.byRole) {
		rs := s.byRole[n]
		parts = append(parts, fmt.Sprintf("%s %s/%s (%d)", n, rs[(len(rs)-1)/2].Round(10*time.Millisecond), rs[len(rs)-1].Round(10*time.Millisecond), len(rs)))
	}
	return strings.Join(parts, ", ")
}

func (s killStats) p50() time.Duration {
	if len(s.recoveries) == 0 {
		return 0
	}
	return s.recoveries[(len(s.recoveries)-1)/2]
}

func (s killStats) max() time.Duration {
	if len(s.recoveries) == 0 {
		return 0
	}
	return s.recoveries[len(s.recoveries)-1]
}

func (s killStats) rolesText() string {
	names := make([]string, 0, len(s.perRole))
	for n := range s.perRole {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, s.perRole[n])
	}
	return strings.Join(parts, ", ")
}
