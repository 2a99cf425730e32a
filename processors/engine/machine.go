package engine

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Machine is a pure state machine over keyed state S (a pointer to a schemas
// record such as *schemas.VmRecord). A nil S is "no state".
//
// Step and Tick must not do I/O, read the clock or use randomness: every
// input arrives as an argument. Returning a nil S deletes the key's state
// (a tombstone on the changelog).
type Machine[S any] interface {
	// Step applies one consumed record (in.Key is the state key) and returns
	// the new state and the records to produce.
	Step(s S, in schemas.Record, now time.Time) (S, []schemas.Record)
	// Tick runs the key's due timers.
	Tick(s S, key string, now time.Time) (S, []schemas.Record)
	// Wake says when the key's state next needs a Tick; the zero time for never.
	Wake(s S) time.Time
}

// Reuser is a Machine that can build the state Step returns in the one it
// is given, where a copy would cost more than the decision (the VM
// processor's same-state power report: a 384-byte copy and a third of the
// bytes a reconnect storm allocates, for three changed fields). The
// runtime hands a state over for good: it keeps only the state a step
// returns, and a batch that does not commit restores every state from the
// changelog, so it calls StepReusing rather than Step when the machine
// has it. Step stays pure for every other caller (tests, replays, a
// scenario that steps one state twice); StepReusing must return what Step
// would, and it may change s only when it returns s. A Parted machine
// that reused states would have to mark the parts it changed in place as
// it does any other change (AppendParts); none does today.
type Reuser[S any] interface {
	StepReusing(s S, in schemas.Record, now time.Time) (S, []schemas.Record)
}

// Forgetter is a Machine that keeps something of its own beside the states
// it is given (placement's index of a zone's hosts): the runtime calls
// Forget with each key whose state it drops, before the state goes, so that
// what the machine kept for the key goes too. It drops the keys of a
// partition the group took away or is about to restore again, and every
// key when a transaction aborts or a group session ends. A key it holds
// again is restored as a new state.
type Forgetter interface {
	Forget(key string)
}

// Clock is the engine's source of time; tests inject a fake one.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
