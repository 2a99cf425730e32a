// Package settings is the catalogue of operator settings, as CloudStack's
// global settings: for each, its name, type, default, range or allowed
// values, the scopes it may be set at (global, then a zone, then a
// cluster), which processors apply it and a line of doc. The gateway
// refuses a value out of range with the range in the message; every
// processor checks each SettingChanged it consumes again with the same
// functions and keeps the values in a Values (docs/design.md §13).
//
// It is data and pure functions and imports only the standard library, so
// that vmctl reads the catalogue without schemas' codecs; tests hold the
// planner names to schemas.Planners and the names to the processors.
package settings

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scopes, from the widest: a zone's value overrides the global one, a
// cluster's its zone's.
const (
	Global  = "global"
	Zone    = "zone"
	Cluster = "cluster"
)

// Kinds of values.
const (
	KindInt      = "int"
	KindFloat    = "float"
	KindDuration = "duration"
	KindBool     = "bool"
	KindEnum     = "enum"
)

// Processors that apply settings (the --kind of `vmplane processor`).
const (
	ByVM        = "vm"
	ByHost      = "host"
	ByPlacement = "placement"
	ByLease     = "lease"
)

// Spec is one setting.
type Spec struct {
	Name string
	Kind string
	// Default is the value when none is set, written as a value.
	Default string
	// Min and Max bound an int, float or duration, both included.
	Min, Max string
	// Allowed lists an enum's values.
	Allowed []string
	// Scopes lists where it may be set; Global always comes first.
	Scopes []string
	// AppliedBy lists the processors that apply it.
	AppliedBy []string
	Doc       string
}

// Setting names.
const (
	DeploymentPlanner     = "vm.deployment.planner"
	ReservationRelease    = "host.reservation.release.period"
	CPUOverprovisioning   = "cpu.overprovisioning.factor"
	MemOverprovisioning   = "mem.overprovisioning.factor"
	PingInterval          = "ping.interval"
	PingTimeout           = "ping.timeout"
	AlertWait             = "alert.wait"
	JobTimeout            = "vm.job.timeout"
	WakeupInterval        = "job.wakeup.interval"
	PowerStateUpdateLimit = "power.state.update.limit"
	HAMaxRetries          = "ha.max.retries"
	HABackoff             = "ha.backoff"
	HABackoffMax          = "ha.backoff.max"
	LeaseMonitorType      = "lease.monitor.type"
	LeaseMonitorPoll      = "lease.monitor.poll.interval"
	HealingWindow         = "healing.window"
	AutoRegister          = "host.auto.register"
)

// Values of lease.monitor.type.
const (
	MonitorPush = "push"
	MonitorPoll = "poll"
	MonitorBoth = "both"
)

// Planners are the values of vm.deployment.planner: schemas.Planners'
// names, held equal by a test.
var Planners = []string{"FirstFitPlanner", "UserDispersingPlanner", "UserConcentratedPodPlanner",
	"ImplicitDedicationPlanner", "BinpackPlanner", "SpreadPlanner"}

var (
	global        = []string{Global}
	globalZone    = []string{Global, Zone}
	globalCluster = []string{Global, Zone, Cluster}
)

// Catalog lists every setting, by name.
var Catalog = []Spec{
	{AlertWait, KindDuration, "30m0s", "1s", "24h0m0s", nil, global, []string{ByHost},
		"How long after the ping timeout a host no investigator could decide turns Alert."},
	{CPUOverprovisioning, KindFloat, "4", "1", "16", nil, globalCluster, []string{ByPlacement},
		"CPU over-commit ratio of hosts that report none of their own; a host takes it with its next status."},
	{HABackoff, KindDuration, "10s", "1s", "1h0m0s", nil, global, []string{ByVM},
		"Wait before the second HA restart attempt of a VM; each later one doubles it up to ha.backoff.max."},
	{HABackoffMax, KindDuration, "5m0s", "1s", "24h0m0s", nil, global, []string{ByVM},
		"Longest wait between two HA restart attempts."},
	{HAMaxRetries, KindInt, "5", "1", "100", nil, global, []string{ByVM},
		"HA restart attempts of a VM before it goes to Error with an HAExhausted alert."},
	{AutoRegister, KindBool, "true", "", "", nil, global, []string{ByHost},
		"An unknown host's agent registers its host on its first hello; off, an admin adds each host first (POST /v1/hosts)."},
	{HealingWindow, KindDuration, "1h0m0s", "1m0s", "720h0m0s", nil, global, []string{ByLease},
		"Leases starting within it (and active ones) are healed when a host fails."},
	{ReservationRelease, KindDuration, "5m0s", "1s", "24h0m0s", nil, globalZone, []string{ByPlacement},
		"How long a host a planner reserved must stay empty before its reservation is released."},
	{WakeupInterval, KindDuration, "3s", "1s", "5m0s", nil, global, []string{ByVM},
		"A running job is checked at least this often, so a lost notification cannot stall it."},
	{LeaseMonitorPoll, KindDuration, "1m0s", "1s", "24h0m0s", nil, globalZone, []string{ByLease},
		"How often polling checks the leases in the healing window against the hosts' status."},
	{LeaseMonitorType, KindEnum, MonitorBoth, "", "", []string{MonitorPush, MonitorPoll, MonitorBoth}, globalZone, []string{ByLease},
		"How leased hosts are watched: push (each host status), poll (every poll interval) or both."},
	{MemOverprovisioning, KindFloat, "1", "1", "4", nil, globalCluster, []string{ByPlacement},
		"Memory over-commit ratio of hosts that report none of their own; a host takes it with its next status."},
	{PingInterval, KindDuration, "1m0s", "1s", "10m0s", nil, global, []string{ByHost},
		"How often the host processor expects agents to ping; set it to the agents' --ping-interval, which they keep."},
	{PingTimeout, KindDuration, "0s", "0s", "1h0m0s", nil, global, []string{ByHost},
		"How long after a ping a host's next must come before it is investigated; 0s or not above ping.interval: 2.5 × ping.interval."},
	{PowerStateUpdateLimit, KindInt, "3", "1", "100", nil, global, []string{ByVM},
		"Consecutive same-state power reports of a VM that are observed; later ones are dropped."},
	{DeploymentPlanner, KindEnum, "FirstFitPlanner", "", "", Planners, globalZone, []string{ByPlacement},
		"The planner of deployments whose offering names none."},
	{JobTimeout, KindDuration, "10m0s", "30s", "24h0m0s", nil, global, []string{ByVM},
		"A job still running this long after it started fails with reason Timeout."},
}

// Lookup returns the setting named name.
func Lookup(name string) (Spec, bool) {
	i := slices.IndexFunc(Catalog, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return Catalog[i], true
}

// Range says in words what values the setting takes: "1s to 10m0s",
// "one of push, poll, both", "true or false".
func (s Spec) Range() string {
	switch s.Kind {
	case KindEnum:
		return "one of " + strings.Join(s.Allowed, ", ")
	case KindBool:
		return "true or false"
	}
	return s.Min + " to " + s.Max
}

// Validate checks a value against the setting's type and range; the error
// names the range.
func (s Spec) Validate(value string) error {
	bad := func() error {
		return fmt.Errorf("%s: %q is out of range: want %s %s", s.Name, value, s.Kind, s.Range())
	}
	switch s.Kind {
	case KindEnum:
		if !slices.Contains(s.Allowed, value) {
			return bad()
		}
	case KindBool:
		if value != "true" && value != "false" {
			return bad()
		}
	case KindInt:
		v, err := strconv.ParseInt(value, 10, 64)
		lo, _ := strconv.ParseInt(s.Min, 10, 64)
		hi, _ := strconv.ParseInt(s.Max, 10, 64)
		if err != nil || v < lo || v > hi {
			return bad()
		}
	case KindFloat:
		v, err := strconv.ParseFloat(value, 64)
		lo, _ := strconv.ParseFloat(s.Min, 64)
		hi, _ := strconv.ParseFloat(s.Max, 64)
		if err != nil || !(v >= lo && v <= hi) {
			return bad()
		}
	case KindDuration:
		v, err := time.ParseDuration(value)
		lo, _ := time.ParseDuration(s.Min)
		hi, _ := time.ParseDuration(s.Max)
		if err != nil || v < lo || v > hi {
			return bad()
		}
	default:
		return fmt.Errorf("%s: unknown kind %q", s.Name, s.Kind)
	}
	return nil
}

// Check validates a change of a setting at a scope: a known name, a scope
// it may be set at, a scope id exactly when the scope is not global, and
// a valid value or "" (back to the default).
func Check(name, scope, scopeID, value string) error {
	s, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("unknown setting %q", name)
	}
	if !slices.Contains(s.Scopes, scope) {
		return fmt.Errorf("%s: scope %q: want %s", name, scope, strings.Join(s.Scopes, " or "))
	}
	if (scope == Global) != (scopeID == "") {
		return fmt.Errorf("%s: a %s value needs a %s id, and only it", name, scope, scope)
	}
	if value == "" {
		return nil
	}
	return s.Validate(value)
}

// Key is the record key of a setting at a scope on settings.v1: the scope,
// its id and the name, so that compaction keeps the latest value of each.
func Key(scope, scopeID, name string) string {
	if scope == Global {
		return Global + ":" + name
	}
	return scope + ":" + scopeID + ":" + name
}

// StatusRefresh is how often the host processor republishes an Up host's
// unchanged status: its last_ping_at in the read models is never staler
// than this and one ping interval more. Pings alone change nothing in the
// read model, so a shorter refresh costs a Postgres row per host per refresh.
func StatusRefresh(pingInterval time.Duration) time.Duration {
	return 10 * pingInterval
}

// ErrNotSet is returned by Values.Get for a setting with no value at any
// scope asked about.
var ErrNotSet = errors.New("not set")

// Values holds the settings a processor consumed: the latest value of each
// name at each scope. The zero Values holds none.
type Values struct {
	m map[string]string // by Key
	// Version counts the changes applied, so a machine can tell that its
	// derived settings are stale.
	Version uint64
}

// Apply checks a change and keeps it; an empty value removes the scope's
// value. A change that fails Check leaves v as it was.
func (v *Values) Apply(name, scope, scopeID, value string) error {
	if err := Check(name, scope, scopeID, value); err != nil {
		return err
	}
	if v.m == nil {
		v.m = map[string]string{}
	}
	k := Key(scope, scopeID, name)
	if value == "" {
		delete(v.m, k)
	} else {
		v.m[k] = value
	}
	v.Version++
	return nil
}

// Get returns the value of name in effect for a cluster of a zone: the
// cluster's, else the zone's, else the global one. Empty ids skip their
// scope.
func (v *Values) Get(name, zone, cluster string) (string, error) {
	if cluster != "" {
		if x, ok := v.m[Key(Cluster, cluster, name)]; ok {
			return x, nil
		}
	}
	if zone != "" {
		if x, ok := v.m[Key(Zone, zone, name)]; ok {
			return x, nil
		}
	}
	if x, ok := v.m[Key(Global, "", name)]; ok {
		return x, nil
	}
	return "", ErrNotSet
}

// Duration returns a duration setting in effect, or def when none is set.
func (v *Values) Duration(name, zone, cluster string, def time.Duration) time.Duration {
	return parsed(v, name, zone, cluster, def, time.ParseDuration)
}

// Int returns an int setting in effect, or def when none is set.
func (v *Values) Int(name, zone, cluster string, def int64) int64 {
	return parsed(v, name, zone, cluster, def, func(x string) (int64, error) { return strconv.ParseInt(x, 10, 64) })
}

// Float returns a float setting in effect, or def when none is set.
func (v *Values) Float(name, zone, cluster string, def float64) float64 {
	return parsed(v, name, zone, cluster, def, func(x string) (float64, error) { return strconv.ParseFloat(x, 64) })
}

// Bool returns a bool setting in effect, or def when none is set.
func (v *Values) Bool(name, zone, cluster string, def bool) bool {
	return parsed(v, name, zone, cluster, def, strconv.ParseBool)
}

// String returns a setting in effect as written, or def when none is set.
func (v *Values) String(name, zone, cluster, def string) string {
	return parsed(v, name, zone, cluster, def, func(x string) (string, error) { return x, nil })
}

// parsed returns the setting in effect read by parse, or def when none is
// set (Apply let only valid values in, so parse does not fail).
func parsed[T any](v *Values, name, zone, cluster string, def T, parse func(string) (T, error)) T {
	x, err := v.Get(name, zone, cluster)
	if err != nil {
		return def
	}
	t, err := parse(x)
	if err != nil {
		return def
	}
	return t
}
