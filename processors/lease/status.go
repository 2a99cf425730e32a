package lease

import "fmt"

// Lease statuses (docs/design.md §8), plus DELETED: the last notification of a
// deleted lease.
const (
	Pending     = "PENDING"
	Starting    = "STARTING"
	Active      = "ACTIVE"
	Updating    = "UPDATING"
	Terminating = "TERMINATING"
	Terminated  = "TERMINATED"
	Deleting    = "DELETING"
	Deleted     = "DELETED"
	Error       = "ERROR"
)

// Reservation statuses.
const (
	ResPending = "pending"
	ResActive  = "active"
	ResDeleted = "deleted"
	ResError   = "error"
)

// leaseEvent is what moves a lease from one status to another.
type leaseEvent string

const (
	evStartTime leaseEvent = "start_time" // the start timer fired
	evStarted   leaseEvent = "started"    // hosts checked and dedicated
	evEndTime   leaseEvent = "end_time"   // the end timer fired
	evEnded     leaseEvent = "ended"      // the project's VMs stopped (or the deadline passed)
	evUpdate    leaseEvent = "update"     // UpdateLease accepted for checking
	evUpdated   leaseEvent = "updated"    // the update was applied
	evUpdateErr leaseEvent = "update_failed"
	evDelete    leaseEvent = "delete"
	evDeleted   leaseEvent = "deleted"
	evFail      leaseEvent = "fail" // no hosts at creation
)

// previous marks a transition back to the status the lease had before
// UPDATING: an update, applied or failed, never changes the lease's place in
// its life (Blazar bug 1786031: a failed update must not put the lease in
// ERROR).
const previous = "<previous>"

// leaseTable is the lease status machine. A pair not in it is not allowed.
var leaseTable = map[string]map[leaseEvent]string{
	Pending:     {evStartTime: Starting, evUpdate: Updating, evDelete: Deleting, evFail: Error},
	Starting:    {evStarted: Active, evDelete: Deleting},
	Active:      {evEndTime: Terminating, evUpdate: Updating, evDelete: Deleting},
	Updating:    {evUpdated: previous, evUpdateErr: previous},
	Terminating: {evEnded: Terminated, evDelete: Deleting},
	Terminated:  {evDelete: Deleting},
	Error:       {evDelete: Deleting},
	Deleting:    {evDeleted: Deleted},
	Deleted:     {},
}

// nextLease returns the status after ev, prev being the status before
// UPDATING.
func nextLease(status, prev string, ev leaseEvent) (string, error) {
	to, ok := leaseTable[status][ev]
	if !ok {
		return status, fmt.Errorf("lease is %s: %s not allowed", status, ev)
	}
	if to == previous {
		return prev, nil
	}
	return to, nil
}

// resEvent moves a reservation.
type resEvent string

const (
	resStart  resEvent = "start"  // the lease became active
	resEnd    resEvent = "end"    // the lease ended or was deleted
	resFail   resEvent = "fail"   // no hosts at creation
	resDelete resEvent = "delete" // the lease was deleted
)

// resTable is the reservation status machine.
var resTable = map[string]map[resEvent]string{
	ResPending: {resStart: ResActive, resEnd: ResDeleted, resDelete: ResDeleted, resFail: ResError},
	ResActive:  {resEnd: ResDeleted, resDelete: ResDeleted},
	ResError:   {resDelete: ResDeleted},
	ResDeleted: {},
}

// nextRes returns the reservation status after ev; a pair not in the table
// leaves it unchanged (ending an already deleted reservation is no change).
func nextRes(status string, ev resEvent) (string, bool) {
	to, ok := resTable[status][ev]
	if !ok {
		return status, false
	}
	return to, true
}

// terminal says the lease holds nothing and waits only for its retention.
func terminal(status string) bool {
	return status == Terminated || status == Deleted || status == Error
}

// holds says the lease holds its hosts in the calendar.
func holds(status string) bool {
	switch status {
	case Pending, Starting, Active, Updating, Terminating, Deleting:
		return true
	}
	return false
}
