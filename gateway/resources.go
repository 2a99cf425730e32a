package gateway

import (
	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
)

// The JSON resources of docs/design.md §10 are the types of package api;
// the functions below render the read model's rows as them.

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func vmJSON(v readmodel.VM) api.VM {
	out := api.VM{
		ID: v.ID, Name: v.Name, Account: v.Account, Offering: v.Offering,
		VmState: v.VmState, TaskState: v.TaskState, PowerState: v.PowerState, LegacyState: v.LegacyState,
		HostID: v.HostID, AllowedActions: nonNil(v.AllowedActions), HA: v.HA,
		CreatedAt: v.CreatedAt.UTC(), UpdatedAt: v.UpdatedAt.UTC(),
		CPU: v.CPU, MemoryMB: v.MemoryMB, ZoneID: v.ZoneID, Epoch: v.Epoch, JobID: v.JobID,
		HostStatus: v.HostStatus, Volumes: []api.Volume{}, Nics: []api.Nic{},
	}
	if v.PowerSeenAt != nil {
		t := v.PowerSeenAt.UTC()
		out.PowerStateAt = &t
	}
	if powerUnseen(v) {
		out.PowerState, out.LastPowerState = powerUnknown, v.PowerState
	}
	return out
}

// powerUnknown is what a VM's power state is while its host is not Up.
const powerUnknown = "PowerUnknown"

// powerUnseen says whether nobody can see v's power now: it is on a host
// the read model knows and that is not Up (Disconnected, Alert, Down, ...).
// The VM processor keeps the last report, which is a fact about the past;
// the API must not show it as the present.
func powerUnseen(v readmodel.VM) bool {
	return v.HostID != "" && v.HostStatus != "" && v.HostStatus != "Up" && v.PowerState != "" && v.PowerState != powerUnknown
}

func jobJSON(j readmodel.Job) api.Job {
	out := api.Job{
		ID: j.ID, VmID: j.VmID, Type: j.Type, State: j.State, Reason: j.Reason, Detail: j.Detail,
		TaskState: j.TaskState, Origin: j.Origin, AllowedActions: j.AllowedActions,
		CreatedAt: j.CreatedAt.UTC(), ErrorCode: j.ErrorCode,
	}
	if j.CallerAccount != "" {
		out.Caller = &api.JobCaller{Account: j.CallerAccount, KeyID: j.CallerKeyID, RequestID: j.CallerRequestID}
	}
	if j.FinishedAt != nil {
		t := j.FinishedAt.UTC()
		out.FinishedAt = &t
	}
	return out
}

func stepJSON(s readmodel.JobStep) api.JobStep {
	return api.JobStep{Seq: s.Seq, TaskState: s.TaskState, Step: s.Step, Text: s.Text, At: s.At.UTC()}
}

func offeringJSON(o readmodel.Offering) api.Offering {
	return api.Offering{
		ID: o.ID, Name: o.Name, CPU: o.CPU, MemoryMB: o.MemoryMB, HA: o.HA,
		DeploymentPlanner: o.DeploymentPlanner, PlannerMode: o.PlannerMode, HostTags: nonNil(o.HostTags),
		StorageTags: nonNil(o.StorageTags),
	}
}
