package host

import (
	"time"

	"github.com/vmplane/vmplane/schemas/settings"
)

// Config holds the host settings (docs/design.md §13).
type Config struct {
	// AutoRegister lets an agent's first AgentConnected register its host;
	// without it, unknown hosts are refused.
	AutoRegister bool
	// PingInterval is ping.interval; PingTimeout (ping.timeout) is how long
	// after a ping the next must have come. A PingTimeout of zero or not
	// above PingInterval means 2.5 × PingInterval: a shorter one would
	// investigate every host between two pings.
	PingInterval time.Duration
	PingTimeout  time.Duration
	// MissingGrace is power.report.missing.grace: how long a VM may be absent
	// from its host's pings before the VM is told. Zero means 2 × PingInterval.
	MissingGrace time.Duration
	// RestartGrace is restart.grace: after the processor was not running, how
	// long every host gets to ping again before a missed ping counts.
	RestartGrace time.Duration
	// TickSlack is how late a Tick may come after its wake time and still be
	// an ordinary timer; a later Tick means the processor was not running
	// when the deadline passed. Zero means PingInterval / 2.
	TickSlack time.Duration
	// VmForget is how long a VM already reported missing is remembered.
	VmForget time.Duration
	// Investigators are asked in order when a ping is missed (docs/design.md §6):
	// InvestigatorNeighbour, InvestigatorVmActivity, InvestigatorFence.
	// Empty means all three in that order.
	Investigators []string
	// StepTimeout is how long one investigator may take to answer before
	// it counts as Unknown. Zero means PingInterval / 2, at least 5 s.
	StepTimeout time.Duration
	// AlertWait is alert.wait: how long after the ping timeout a host that
	// no investigator could decide turns Alert.
	AlertWait time.Duration
	// StatusRefresh republishes an Up host's unchanged status when its last
	// publication is this old, so last_ping_at in the read models is never
	// staler than this. Zero means settings.StatusRefresh(PingInterval),
	// 10 × PingInterval, which the gateway tells API clients.
	StatusRefresh time.Duration
}

// DefaultConfig returns the defaults of docs/design.md §13.
func DefaultConfig() Config {
	return Config{
		AutoRegister: true,
		PingInterval: 60 * time.Second,
		PingTimeout:  150 * time.Second,
		MissingGrace: 120 * time.Second,
		RestartGrace: 300 * time.Second,
		TickSlack:    30 * time.Second,
		VmForget:     24 * time.Hour,
		AlertWait:    1800 * time.Second,
	}
}

// with returns c with the operator settings the host processor applies.
func (c Config) with(v *settings.Values) Config {
	c.PingInterval = v.Duration(settings.PingInterval, "", "", c.PingInterval)
	c.PingTimeout = v.Duration(settings.PingTimeout, "", "", c.PingTimeout)
	c.AlertWait = v.Duration(settings.AlertWait, "", "", c.AlertWait)
	c.AutoRegister = v.Bool(settings.AutoRegister, "", "", c.AutoRegister)
	return c
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.PingInterval <= 0 {
		c.PingInterval = d.PingInterval
	}
	if c.PingTimeout <= c.PingInterval {
		c.PingTimeout = c.PingInterval * 5 / 2
	}
	if c.MissingGrace <= 0 {
		c.MissingGrace = 2 * c.PingInterval
	}
	if c.RestartGrace <= 0 {
		c.RestartGrace = d.RestartGrace
	}
	if c.TickSlack <= 0 {
		c.TickSlack = c.PingInterval / 2
	}
	if c.VmForget <= 0 {
		c.VmForget = d.VmForget
	}
	if len(c.Investigators) == 0 {
		c.Investigators = []string{InvestigatorNeighbour, InvestigatorVmActivity, InvestigatorFence}
	}
	if c.StepTimeout <= 0 {
		c.StepTimeout = max(c.PingInterval/2, 5*time.Second)
	}
	if c.AlertWait <= 0 {
		c.AlertWait = d.AlertWait
	}
	if c.StatusRefresh <= 0 {
		c.StatusRefresh = settings.StatusRefresh(c.PingInterval)
	}
	return c
}
