package lease

import (
	"slices"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

func TestLeaseTransitions(t *testing.T) {
	tests := []struct {
		from, prev string
		ev         leaseEvent
		want       string
		ok         bool
	}{
		{Pending, "", evStartTime, Starting, true},
		{Starting, "", evStarted, Active, true},
		{Active, "", evEndTime, Terminating, true},
		{Terminating, "", evEnded, Terminated, true},
		{Pending, "", evUpdate, Updating, true},
		{Active, "", evUpdate, Updating, true},
		// Applied or failed, an update returns to where the lease was
		// (Blazar bug 1786031: never ERROR for a failed update).
		{Updating, Active, evUpdated, Active, true},
		{Updating, Pending, evUpdated, Pending, true},
		{Updating, Active, evUpdateErr, Active, true},
		{Updating, Pending, evUpdateErr, Pending, true},
		{Pending, "", evDelete, Deleting, true},
		{Active, "", evDelete, Deleting, true},
		{Terminating, "", evDelete, Deleting, true},
		{Terminated, "", evDelete, Deleting, true},
		{Error, "", evDelete, Deleting, true},
		{Deleting, "", evDeleted, Deleted, true},
		{Pending, "", evFail, Error, true},
		// Not allowed.
		{Terminated, "", evUpdate, Terminated, false},
		{Terminating, "", evUpdate, Terminating, false},
		{Error, "", evUpdate, Error, false},
		{Deleting, "", evDelete, Deleting, false},
		{Deleted, "", evDelete, Deleted, false},
		{Active, "", evStartTime, Active, false},
		{Pending, "", evEndTime, Pending, false},
		{Active, "", evFail, Active, false},
		{Starting, "", evUpdate, Starting, false},
	}
	for _, tc := range tests {
		got, err := nextLease(tc.from, tc.prev, tc.ev)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%s --%s--> %s (err %v), want %s ok=%v", tc.from, tc.ev, got, err, tc.want, tc.ok)
		}
	}
}

// TestLeaseTableReachesAnEnd checks that from every status some path of
// the table reaches a terminal status, so no lease can be stuck.
func TestLeaseTableReachesAnEnd(t *testing.T) {
	for from := range leaseTable {
		seen, todo, ok := map[string]bool{}, []string{from}, false
		for len(todo) > 0 && !ok {
			s := todo[0]
			todo = todo[1:]
			if terminal(s) {
				ok = true
			}
			for _, to := range leaseTable[s] {
				if to == previous {
					to = Active
				}
				if !seen[to] {
					seen[to] = true
					todo = append(todo, to)
				}
			}
		}
		if !ok {
			t.Errorf("no terminal status reachable from %s", from)
		}
	}
}

func TestReservationTransitions(t *testing.T) {
	tests := []struct {
		from string
		ev   resEvent
		want string
		ok   bool
	}{
		{ResPending, resStart, ResActive, true},
		{ResPending, resEnd, ResDeleted, true},
		{ResPending, resFail, ResError, true},
		{ResPending, resDelete, ResDeleted, true},
		{ResActive, resEnd, ResDeleted, true},
		{ResActive, resDelete, ResDeleted, true},
		{ResError, resDelete, ResDeleted, true},
		{ResActive, resStart, ResActive, false},
		{ResActive, resFail, ResActive, false},
		{ResDeleted, resStart, ResDeleted, false},
		{ResError, resStart, ResError, false},
	}
	for _, tc := range tests {
		got, ok := nextRes(tc.from, tc.ev)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s --%s--> %s ok=%v, want %s ok=%v", tc.from, tc.ev, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHoldsAndTerminal(t *testing.T) {
	for s := range leaseTable {
		if holds(s) == terminal(s) {
			t.Errorf("%s: holds=%v terminal=%v; a status does exactly one", s, holds(s), terminal(s))
		}
	}
	// Placement is told to dedicate from the start until the lease is over.
	var got []string
	for s := range leaseTable {
		l := &schemas.LeaseRecord{Status: s, Reservations: []schemas.Reservation{{Status: ResActive, Hosts: []string{"h1"}}}}
		if len(dedicated(l)) > 0 {
			got = append(got, s)
		}
	}
	slices.Sort(got)
	if want := []string{Active, Deleting, Terminating, Updating}; !slices.Equal(got, want) {
		t.Errorf("dedicating statuses %v, want %v", got, want)
	}
}
