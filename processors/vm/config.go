package vm

import (
	"time"

	"github.com/vmplane/vmplane/schemas/settings"
)

// Config holds the VM processor's settings (docs/design.md §13). A zero field takes
// its default, so a partly filled Config works.
type Config struct {
	// JobTimeout is vm.job.timeout: a job still running this long after it
	// started fails with reason Timeout and releases what it holds.
	JobTimeout time.Duration
	// WakeupInterval is job.wakeup.interval: a running job is re-checked at
	// least this often, so a lost notification cannot stall it.
	WakeupInterval time.Duration
	// StallThreshold is job.stall.threshold: a job with no step for this long
	// raises AlertRaised{JobStalled}.
	StallThreshold time.Duration
	// PowerStateUpdateLimit is power.state.update.limit: how many consecutive
	// same-state power reports emit PowerStateObserved; later ones emit nothing.
	PowerStateUpdateLimit int32
	// ExpungeDelay is expunge.delay: how long a Deleted VM is kept before it
	// is expunged.
	ExpungeDelay time.Duration
	// HAMaxRetries is ha.max.retries: how many HA restarts of a VM are
	// tried before it goes to Error with AlertRaised{HAExhausted}.
	HAMaxRetries int32
	// HABackoff is ha.backoff, the wait before a VM's second HA restart
	// attempt; each later one doubles it, up to HABackoffMax
	// (ha.backoff.max).
	HABackoff    time.Duration
	HABackoffMax time.Duration
	// ResendAfter is how long a job waits for an agent's answer before it
	// sends the same command again. Agents execute a command id once and
	// answer repeats with the first answer, so re-sending is safe.
	ResendAfter time.Duration
}

// DefaultConfig returns the defaults of docs/design.md §13.
func DefaultConfig() Config {
	return Config{
		JobTimeout:            600 * time.Second,
		WakeupInterval:        3 * time.Second,
		StallThreshold:        90 * time.Second,
		PowerStateUpdateLimit: 3,
		ExpungeDelay:          86400 * time.Second,
		HAMaxRetries:          5,
		HABackoff:             10 * time.Second,
		HABackoffMax:          5 * time.Minute,
		ResendAfter:           30 * time.Second,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.JobTimeout <= 0 {
		c.JobTimeout = d.JobTimeout
	}
	if c.WakeupInterval <= 0 {
		c.WakeupInterval = d.WakeupInterval
	}
	if c.StallThreshold <= 0 {
		c.StallThreshold = d.StallThreshold
	}
	if c.PowerStateUpdateLimit <= 0 {
		c.PowerStateUpdateLimit = d.PowerStateUpdateLimit
	}
	if c.ExpungeDelay <= 0 {
		c.ExpungeDelay = d.ExpungeDelay
	}
	if c.HAMaxRetries <= 0 {
		c.HAMaxRetries = d.HAMaxRetries
	}
	if c.ResendAfter <= 0 {
		c.ResendAfter = d.ResendAfter
	}
	if c.HABackoff <= 0 {
		c.HABackoff = d.HABackoff
	}
	if c.HABackoffMax <= 0 {
		c.HABackoffMax = d.HABackoffMax
	}
	return c
}

// with returns c with the operator settings the VM processor applies.
func (c Config) with(v *settings.Values) Config {
	c.JobTimeout = v.Duration(settings.JobTimeout, "", "", c.JobTimeout)
	c.WakeupInterval = v.Duration(settings.WakeupInterval, "", "", c.WakeupInterval)
	c.PowerStateUpdateLimit = int32(v.Int(settings.PowerStateUpdateLimit, "", "", int64(c.PowerStateUpdateLimit)))
	c.HAMaxRetries = int32(v.Int(settings.HAMaxRetries, "", "", int64(c.HAMaxRetries)))
	c.HABackoff = v.Duration(settings.HABackoff, "", "", c.HABackoff)
	c.HABackoffMax = v.Duration(settings.HABackoffMax, "", "", c.HABackoffMax)
	return c
}
