package placement

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Config holds the placement settings (docs/design.md §13).
type Config struct {
	// DefaultPlanner is vm.deployment.planner, used when an offering names none.
	DefaultPlanner string
	// CPUOvercommit and MemOvercommit apply to hosts that report no ratio of
	// their own; zero means 1.0.
	CPUOvercommit float64
	MemOvercommit float64
	// HostReservationReleasePeriod is host.reservation.release.period: how long
	// a reserved host must stay empty before its reservation is released.
	HostReservationReleasePeriod time.Duration
	// DecidedMemory is how many decided request ids a zone remembers for dedup.
	DecidedMemory int
}

// DefaultConfig returns the defaults of docs/design.md §13.
func DefaultConfig() Config {
	return Config{
		DefaultPlanner:               FirstFitName,
		CPUOvercommit:                schemas.DefaultCPUOvercommit,
		MemOvercommit:                schemas.DefaultMemOvercommit,
		HostReservationReleasePeriod: 300 * time.Second,
		DecidedMemory:                256,
	}
}

// withDefaults fills zero settings so a partly filled Config still works.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.DefaultPlanner == "" {
		c.DefaultPlanner = d.DefaultPlanner
	}
	if c.CPUOvercommit <= 0 {
		c.CPUOvercommit = 1.0
	}
	if c.MemOvercommit <= 0 {
		c.MemOvercommit = 1.0
	}
	if c.HostReservationReleasePeriod <= 0 {
		c.HostReservationReleasePeriod = d.HostReservationReleasePeriod
	}
	if c.DecidedMemory <= 0 {
		c.DecidedMemory = d.DecidedMemory
	}
	return c
}
