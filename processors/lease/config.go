package lease

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

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

// Config holds the lease settings (docs/design.md §13). Start from DefaultConfig:
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
	// Policy bounds what one account's leases may hold.
	Policy Policy
}

// Policy bounds what one account may lease in a zone, so that no account
// can hold every host of a zone for years (issue 23). An admin's request
// is exempt from the length and the quota (the gateway marks it); no
// request, an admin's included, takes a host that runs another account's
// VMs (see candidates).
type Policy struct {
	// MaxLength is the longest a lease may be, start to end
	// (lease.max.length). Negative for no limit.
	MaxLength time.Duration
	// HostHours is an account's lease quota in a zone
	// (lease.quota.host.hours): the hosts its leases hold times the hours
	// they hold them from now on, summed over its leases that have not
	// ended. Negative for no limit.
	HostHours int64
	// Accounts overrides HostHours for the accounts it lists: 0 lets the
	// account lease nothing, a negative value sets no limit.
	Accounts map[string]int64
}

// ParsePolicy reads the policy's settings as an operator writes them (the
// processor role's environment): maxLength a duration ("168h"), quota a
// whole number of host-hours, accounts a list "acme=1000,lab=none"; "none"
// is no limit, and an empty setting keeps the default.
func ParsePolicy(maxLength, quota, accounts string) (Policy, error) {
	var p Policy
	switch d, err := time.ParseDuration(maxLength); {
	case maxLength == "":
	case maxLength == "none":
		p.MaxLength = -1
	case err != nil || d <= 0:
		return p, fmt.Errorf("maximum lease length %q: want a duration such as 168h, or none", maxLength)
	default:
		p.MaxLength = d
	}
	var err error
	if quota != "" {
		if p.HostHours, err = hostHours(quota); err != nil || p.HostHours == 0 {
			return p, fmt.Errorf("lease quota %q: want a whole number of host-hours above 0, or none", quota)
		}
	}
	for _, kv := range strings.Split(accounts, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		account, v, ok := strings.Cut(kv, "=")
		q, err := hostHours(v)
		if !ok || account == "" || err != nil {
			return p, fmt.Errorf("account lease quota %q: want account=host-hours or account=none", kv)
		}
		if p.Accounts == nil {
			p.Accounts = map[string]int64{}
		}
		p.Accounts[account] = q
	}
	return p, nil
}

// hostHours reads a quota: a whole number of host-hours, or none (-1).
func hostHours(v string) (int64, error) {
	if v == "none" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err == nil && n < 0 {
		err = errors.New("negative")
	}
	return n, err
}

// quota returns account's lease quota in host-hours; negative is none.
func (p Policy) quota(account string) int64 {
	if q, ok := p.Accounts[account]; ok {
		return q
	}
	return p.HostHours
}

// DefaultConfig returns the defaults of docs/design.md §13.
func DefaultConfig() Config {
	return Config{
		Monitor:       Monitor{Push: true, Poll: true, PollInterval: 60 * time.Second},
		HealingWindow: 60 * time.Minute,
		StopTimeout:   11 * time.Minute,
		Retention:     24 * time.Hour,
		Dedup:         1000,
		// A week's lease, and two hosts for a whole one: a user cannot
		// take a zone for long, and an admin can lease beyond both.
		Policy: Policy{MaxLength: 7 * 24 * time.Hour, HostHours: 2 * 7 * 24},
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
	if c.Policy.MaxLength == 0 {
		c.Policy.MaxLength = d.Policy.MaxLength
	}
	if c.Policy.HostHours == 0 {
		c.Policy.HostHours = d.Policy.HostHours
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
