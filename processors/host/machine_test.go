package host

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// stateMachine mirrors processors/engine.Machine, which this package must
// satisfy without importing it.
type stateMachine[S any] interface {
	Step(s S, in schemas.Record, now time.Time) (S, []schemas.Record)
	Tick(s S, key string, now time.Time) (S, []schemas.Record)
	Wake(s S) time.Time
}

var _ stateMachine[*schemas.HostRecord] = (*Machine)(nil)
