package lease

import "time"

// Monitor says how a zone's hosts are watched.
type Monitor struct {
	// Push heals as soon as a HostStatus says a leased host is not
	// reservable.
	Push bool
	// Poll reconciles every lease in the healing window against the status
	// table every PollInterval (lease.monitor.poll.interval).
	Poll         bool
	PollInterval time.Duration
}

// Config holds the lease settings (DESIGN §13). Start from DefaultConfig:
// the monitor switches are on there.
type Config struct {
	// Monitor applies to every zone not listed in Zones.
	Monitor Monitor
	// Zones overrides Monitor per zone.
	Zones map[string]Monitor
	// HealingWindow is healing.window: leases starting within it (and
	// active ones) are healed.
	HealingWindow time.Duration
	// StopTimeout bounds how long a lease end waits for the project's VMs
	// to stop (a little over vm.job.timeout).
	StopTimeout time.Duration
	// Retention is how long a terminal lease stays in state, so late
	// commands about it get a meaningful answer.
	Retention time.Duration
	// Dedup is how many applied command ids are remembered.
	Dedup int
}

// DefaultConfig returns the defaults of DESIGN §13.
func DefaultConfig() Config {
	return Config{
		Monitor:       Monitor{Push: true, Poll: true, PollInterval: 60 * time.Second},
		HealingWindow: 60 * time.Minute,
		StopTimeout:   11 * time.Minute,
		Retention:     24 * time.Hour,
		Dedup:         1000,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Monitor.PollInterval <= 0 {
		c.Monitor.PollInterval = d.Monitor.PollInterval
	}
	if c.HealingWindow <= 0 {
		c.HealingWindow = d.HealingWindow
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = d.StopTimeout
	}
	if c.Retention <= 0 {
		c.Retention = d.Retention
	}
	if c.Dedup <= 0 {
		c.Dedup = d.Dedup
	}
	return c
}

// monitor returns the zone's monitor settings.
func (c Config) monitor(zone string) Monitor {
	mo, ok := c.Zones[zone]
	if !ok {
		return c.Monitor
	}
	if mo.PollInterval <= 0 {
		mo.PollInterval = c.Monitor.PollInterval
	}
	return mo
}
