package roles

import (
	"fmt"
	"os"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/processors/host"
	"github.com/vmplane/vmplane/processors/lease"
	"github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/processors/vm"
	"github.com/vmplane/vmplane/schemas"
)

// Processor kinds.
const (
	KindVM        = "vm"
	KindHost      = "host"
	KindPlacement = "placement"
	KindLease     = "lease"
	// KindHostRelay brings the ends of maintenance migrations back to
	// their host (processors/host.Relay).
	KindHostRelay = "host-relay"
)

// ProcessorKinds lists the processors in the order the dev stack starts them.
var ProcessorKinds = []string{KindPlacement, KindLease, KindHost, KindHostRelay, KindVM}

// Processor is a runtime processor of any machine.
type Processor interface {
	Runner
	Ready() bool
	// ReadyErr says why the processor is not ready (nil when it is): a
	// restore in progress or stalled, with where it stands.
	ReadyErr() error
}

// NewProcessor returns the processor of a kind.
func NewProcessor(kind string, o Options, s Settings, clock engine.Clock) (Processor, error) {
	// Every machine but the host relay is Configurable: it takes the
	// operator settings of settings.v1 over the Config it starts with.
	cfg := engine.Config{Name: "processor-" + kind, Kafka: o.Kafka, InstanceID: o.InstanceID, Clock: clock, Logger: o.Logger,
		Settings: schemas.TopicSettings}
	switch kind {
	case KindVM:
		cfg.Inputs = []string{schemas.TopicVmCommands, schemas.TopicVmPower, schemas.TopicVmAnswers, schemas.TopicVmSignals}
		cfg.Changelog = schemas.TopicVmState
		telemetry.PrepareJobs(vm.ActHARestart)
		return engine.New(cfg, engine.Machine[*schemas.VmRecord](vm.New(vm.DefaultConfig())))
	case KindHost:
		cfg.Inputs = []string{schemas.TopicHostEvents, schemas.TopicHostCommands}
		cfg.Changelog = schemas.TopicHostState
		hc := host.DefaultConfig()
		// Timeout, grace and slack follow the interval, the flag's or the
		// ping.interval setting's (docs/design.md §13).
		hc.PingTimeout, hc.MissingGrace, hc.TickSlack = 0, 0, 0
		if s.PingInterval > 0 {
			hc.PingInterval = s.PingInterval
		}
		return engine.New(cfg, engine.Machine[*schemas.HostRecord](host.New(hc)))
	case KindHostRelay:
		cfg.Inputs = []string{schemas.TopicVmEvents}
		cfg.Changelog = schemas.TopicHostRelay
		return engine.New(cfg, engine.Machine[*schemas.HostRecord](host.Relay{}))
	case KindPlacement:
		cfg.Inputs = []string{schemas.TopicPlacementRequests}
		cfg.Changelog = schemas.TopicPlacementState
		return engine.New(cfg, engine.Machine[*schemas.ZoneRecord](placement.New(placement.DefaultConfig())))
	case KindLease:
		// placement.events.v1 is zone-keyed like lease.commands.v1: it tells
		// the lease processor which VM runs where, and when a stopped VM
		// released its host.
		cfg.Inputs = []string{schemas.TopicLeaseCommands, schemas.TopicPlacementEvents}
		cfg.Changelog = schemas.TopicLeaseState
		lc := lease.DefaultConfig()
		// The lease policy until the settings system: README's table.
		p, err := lease.ParsePolicy(os.Getenv("VMPLANE_LEASE_MAX_LENGTH"), os.Getenv("VMPLANE_LEASE_QUOTA"),
			os.Getenv("VMPLANE_LEASE_ACCOUNT_QUOTAS"))
		if err != nil {
			return nil, fmt.Errorf("lease policy: %w", err)
		}
		lc.Policy = p
		return engine.New(cfg, engine.Machine[*schemas.LeaseZoneRecord](lease.New(lc)))
	}
	return nil, fmt.Errorf("unknown processor kind %q (want vm, host, host-relay, placement or lease)", kind)
}

// Placement and the lease processor write their zones in parts: without
// these methods the runtime would write each zone whole, every
// transaction, and nothing else would notice.
var (
	_ engine.Parted[*schemas.ZoneRecord]      = (*placement.Machine)(nil)
	_ engine.Parted[*schemas.LeaseZoneRecord] = (*lease.Machine)(nil)
)

// Both keep an index per zone: without Forget, a zone whose partition moved
// to another instance would stay in memory here.
var (
	_ engine.Forgetter = (*placement.Machine)(nil)
	_ engine.Forgetter = (*lease.Machine)(nil)
)

// The VM machine decides a storm's same-state reports in the record it is
// given: without StepReusing the runtime would copy every VM per report.
var _ engine.Reuser[*schemas.VmRecord] = (*vm.Machine)(nil)
