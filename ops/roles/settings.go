package roles

import "time"

// Settings are the tunables that several roles must agree on.
type Settings struct {
	// PingInterval is the agents' report period; the host processor's ping
	// timeout and missing-VM grace follow from it (docs/design.md §13).
	PingInterval time.Duration
}
