package schemas

// Key classes: topics of one class are co-partitioned (same partition count
// and the same key hashing), so one processor instance owns all inputs of a
// key.
const (
	KeyVM      = "vm_id"
	KeyHost    = "host_id"
	KeyZone    = "zone_id"
	KeyCatalog = "offering_id"
	KeyAccount = "account_id"
	KeyAlert   = "alert_id"
	// KeySetting is a setting's scope and name (schemas/settings.Key).
	KeySetting = "setting"
)

// Topic names.
const (
	TopicVmCommands        = "vm.commands.v1"
	TopicVmPower           = "vm.power.v1"
	TopicVmAnswers         = "vm.answers.v1"
	TopicVmSignals         = "vm.signals.v1"
	TopicVmEvents          = "vm.events.v1"
	TopicAlertAcks         = "alert.acks.v1"
	TopicVmState           = "vm.state.v1"
	TopicAgentCommands     = "agent.commands.v1"
	TopicHostEvents        = "host.events.v1"
	TopicHostCommands      = "host.commands.v1"
	TopicHostStatus        = "host.status.v1"
	TopicHostState         = "host.state.v1"
	TopicHostRelay         = "host.relay.v1"
	TopicPlacementRequests = "placement.requests.v1"
	TopicPlacementEvents   = "placement.events.v1"
	TopicPlacementState    = "placement.state.v1"
	TopicLeaseCommands     = "lease.commands.v1"
	TopicLeaseEvents       = "lease.events.v1"
	TopicLeaseState        = "lease.state.v1"
	TopicCatalog           = "catalog.v1"
	TopicAccounts          = "accounts.v1"
	TopicSettings          = "settings.v1"
	TopicDLQ               = "dlq.v1"
)

// TopicSpec is one row of the topic table, applied with kadm at start-up.
type TopicSpec struct {
	Name      string
	KeyClass  string
	Compacted bool
	// Types lists the record names the topic carries; consumers reject
	// others to dlq.v1. Empty for dlq.v1, which keeps the original bytes.
	Types []string
	Doc   string
}

// Partitions per key class. Every topic of a class has this many partitions.
var Partitions = map[string]int32{
	KeyVM:      12,
	KeyHost:    6,
	KeyZone:    3,
	KeyCatalog: 1,
	KeyAccount: 1,
	KeyAlert:   1,
	KeySetting: 1,
}

var vmCommandTypes = []string{"Deploy", "Start", "Stop", "Reboot", "Pause", "Unpause", "Suspend", "Resume",
	"Rescue", "Unrescue", "Rebuild", "Snapshot", "Migrate", "Resize", "ConfirmResize", "RevertResize", "Terminate", "CancelJob",
	"RevertSnapshot", "DeleteSnapshot", "Recover", "AttachVolume", "DetachVolume", "ResizeVolume", "SnapshotVolume", "DeleteVolume"}

var agentCommandTypes = []string{"StartVm", "StopVm", "DestroyVm", "RebootVm", "PauseVm", "UnpauseVm",
	"SuspendVm", "ResumeVm", "RescueVm", "UnrescueVm", "RebuildVm", "SnapshotVm", "RevertSnapshotVm", "DeleteSnapshotVm", "MigrateVm", "AbortMigrateVm", "CheckVm", "CheckHost", "FenceHost", "AgentRejected",
	"AttachVolumeVm", "DetachVolumeVm", "ResizeVolumeVm", "SnapshotVolumeVm", "DeleteVolumeVm"}

// Topics is the topic table of docs/design.md §3 plus the processors' changelogs.
var Topics = []TopicSpec{
	{TopicVmCommands, KeyVM, false, vmCommandTypes, "VM lifecycle commands."},
	{TopicVmPower, KeyVM, false, []string{"PowerReport"}, "Raw power reports from agents."},
	{TopicVmAnswers, KeyVM, false, []string{"AgentAnswer"}, "Agent answers to VM commands."},
	{TopicVmSignals, KeyVM, false, []string{"PlacementDecided", "PlacementFailed", "HostDown", "VmMissingFromHost", "StoragePoolDown"}, "Signals to VMs from placement and host."},
	{TopicVmEvents, KeyVM, false, []string{"JobAccepted", "JobStepped", "JobSucceeded", "JobFailed", "JobCancelled", "JobRejected", "VmStateChanged", "PowerStateObserved", "AlertRaised", "VmExpunged", "SnapshotTaken", "SnapshotDeleted", "VolumeChanged", "NicChanged", "VolumeSnapshotTaken"}, "VM and job events, and alerts (a host's keyed by its host id)."},
	{TopicVmState, KeyVM, true, []string{"VmRecord"}, "Changelog of the VM processor."},
	{TopicAgentCommands, KeyHost, false, agentCommandTypes, "Commands to agents."},
	{TopicHostEvents, KeyHost, false, []string{"AgentConnected", "AgentPing", "AgentDisconnected", "CheckHostAnswer", "MaintenanceMigrationEnded"}, "Agent connect, ping, disconnect, investigation answers, maintenance job ends."},
	{TopicHostCommands, KeyHost, false, []string{"EnableHost", "DisableHost", "PrepareForMaintenance", "CancelMaintenance", "RemoveHost", "AddHost", "UnmanageHost", "ManageHost"}, "Admin host commands."},
	{TopicHostStatus, KeyHost, true, []string{"HostStatus"}, "Latest status of each host."},
	{TopicHostState, KeyHost, true, []string{"HostRecord"}, "Changelog of the host processor."},
	{TopicHostRelay, KeyVM, true, []string{}, "Changelog of the host relay, which keeps no state (tombstones only)."},
	{TopicPlacementRequests, KeyZone, false, []string{"PlaceVm", "ReleaseVm", "ResizeVm", "HostStatus", "LeaseStatusChanged", "UpdateStoragePool", "UpdateNetwork"}, "Placement requests, the zone's host status, and its storage pools and networks."},
	{TopicPlacementEvents, KeyZone, false, []string{"CapacityAllocated", "CapacityReleased", "HostReserved", "HostReservationReleased", "StoragePoolChanged", "NetworkChanged"}, "Capacity ledger changes, storage pools and networks."},
	{TopicPlacementState, KeyZone, true, []string{"ZoneHeader", "ZoneHost", "ZoneVm", "ZonePool", "ZoneNetwork", "ZoneRecord"}, "Changelog of the placement processor: each zone in parts (ZoneRecord: a zone written whole before the parts)."},
	{TopicLeaseCommands, KeyZone, false, []string{"CreateLease", "UpdateLease", "DeleteLease", "HostStatus"}, "Lease commands and the zone's host status."},
	{TopicLeaseEvents, KeyZone, false, []string{"LeaseStatusChanged", "LeaseHostChanged"}, "Lease and resource notifications."},
	{TopicLeaseState, KeyZone, true, []string{"LeaseZoneHeader", "LeaseZoneHost", "LeaseZoneVm", "LeaseZoneRecord"}, "Changelog of the lease processor: each zone in parts (LeaseZoneRecord: a zone written whole before the parts)."},
	{TopicCatalog, KeyCatalog, true, []string{"ServiceOffering", "Template"}, "Service offerings, and templates (key template:<id>)."},
	{TopicAccounts, KeyAccount, false, []string{"AccountCreated", "ApiKeyIssued", "ApiKeyRevoked"}, "Accounts and API keys."},
	{TopicAlertAcks, KeyAlert, true, []string{"AlertAcknowledged"}, "Acknowledgements of alerts."},
	{TopicSettings, KeySetting, true, []string{"SettingChanged"}, "Operator settings, the latest value per scope and name."},
	{TopicDLQ, "", false, nil, "Undecodable or poison records; the error is in headers."},
}

// TopicByName returns the spec of a topic.
func TopicByName(name string) (TopicSpec, bool) {
	for _, t := range Topics {
		if t.Name == name {
			return t, true
		}
	}
	return TopicSpec{}, false
}

// PartitionsOf returns the partition count of a topic (dlq.v1 has 1).
func (t TopicSpec) PartitionsOf() int32 {
	if p, ok := Partitions[t.KeyClass]; ok {
		return p
	}
	return 1
}

// Carries reports whether the topic carries records of the named type.
func (t TopicSpec) Carries(name string) bool {
	if t.Name == TopicDLQ {
		return true
	}
	for _, n := range t.Types {
		if n == name {
			return true
		}
	}
	return false
}

// TopicsCarrying returns the topics that carry records of the named type
// (dlq.v1, which keeps anything, aside).
func TopicsCarrying(name string) []string {
	var out []string
	for _, t := range Topics {
		if t.Name != TopicDLQ && t.Carries(name) {
			out = append(out, t.Name)
		}
	}
	return out
}
