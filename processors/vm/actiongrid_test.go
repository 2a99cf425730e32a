package vm

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// allActions returns the rows a caller may send for a VM that exists: the
// ones some state allows. A function, not a variable: init fills the
// table after the package's variables are set, so a variable would hold
// none and the grid would test nothing.
func allActions() []string {
	var out []string
	for _, a := range actionTable {
		if len(a.allowed) > 0 || a.always {
			out = append(out, a.name)
		}
	}
	return out
}

var allTasks = []string{"", TaskScheduling, TaskNetworking, TaskBlockDeviceMapping, TaskSpawning, TaskStarting, TaskStopping,
	TaskRebooting, TaskPausing, TaskUnpausing, TaskSuspending, TaskResuming, TaskMigrating, TaskResizing, TaskResizeVerify,
	TaskRebuilding, TaskRescuing, TaskUnrescuing, TaskSnapshotting, TaskRevertingSnapshot, TaskDeletingSnapshot,
	TaskRecovering, TaskDeleting, TaskAttachingVolume, TaskDetachingVolume, TaskResizingVolume, TaskSnapshottingVolume,
	TaskDeletingVolume}

// gridStorage gives the grid's VM a volume for each volume action: a root,
// an attached data volume and a detached one, all on a pool.
func gridStorage() *schemas.VmStorage {
	return &schemas.VmStorage{TemplateID: "t1", Volumes: []schemas.Volume{
		{VolumeID: "vm1-root", Kind: schemas.VolumeRoot, PoolID: "p1", SizeMB: 2048, TemplateID: "t1", State: schemas.VolumeReady},
		{VolumeID: "vm1-data-1", Kind: schemas.VolumeData, DeviceID: 1, PoolID: "p1", SizeMB: 1024, State: schemas.VolumeReady},
		{VolumeID: "vm1-data-2", Kind: schemas.VolumeData, DeviceID: 2, PoolID: "p1", SizeMB: 1024, State: schemas.VolumeDetached},
	}}
}

// TestActionGrid steps every action against every vm_state × task_state
// and checks the processor's answer against the table: with no job, an
// allowed action starts a job and any other is rejected with InvalidState
// and the allowed list; with a job in flight, Terminate cancels it and
// every other command queues.
func TestActionGrid(t *testing.T) {
	m := New(DefaultConfig())
	now := time.UnixMilli(1_000_000).UTC()
	powerOf := map[string]string{StateActive: schemas.PowerOn, StateResized: schemas.PowerOn, StateRescued: schemas.PowerOn,
		StatePaused: schemas.PowerPaused, StateSuspended: schemas.PowerSusp, StateStopped: schemas.PowerOff}
	for _, vmState := range stationaryStates {
		for _, task := range allTasks {
			for _, action := range allActions() {
				name := fmt.Sprintf("%s/%s/%s", vmState, task, action)
				s := &schemas.VmRecord{VmID: "vm1", Account: "acme", ZoneID: "z1", VmState: vmState,
					PowerState: powerOf[vmState], HostID: "h1", PowerHost: "h1", Epoch: 5,
					Offering: schemas.Offering{Name: "small", CPU: 1, MemoryMB: 1024}, Storage: gridStorage(),
					Rare: &schemas.VmRare{TaskState: task, OldOffering: &schemas.Offering{Name: "tiny", CPU: 1, MemoryMB: 512},
						Snapshots: &schemas.SnapshotList{Items: []schemas.VmSnapshot{{Name: "s1", TakenAt: 1}}}}}
				if task != "" {
					s.Job = &schemas.JobState{JobID: "running", JobType: ActStop, Phase: phaseStopping, Deadline: now.Add(time.Hour).UnixMilli(),
						Wait: schemas.JobWait{Kind: waitAnswer, RequestID: "running-1", HostID: "h1", Power: schemas.PowerOff}}
				}
				v, _ := schemas.New(action)
				*v.(schemas.VmCommandRecord).Common() = schemas.VmCommand{CommandID: "c1", VmID: "vm1", Account: "acme"}
				switch c := v.(type) {
				case *schemas.Resize:
					c.Offering = schemas.Offering{Name: "big", CPU: 4, MemoryMB: 4096}
				case *schemas.RevertSnapshot:
					c.SnapshotName = "s1"
				case *schemas.DeleteSnapshot:
					c.SnapshotName = "s1"
				case *schemas.AttachVolume:
					c.SizeGB = 10
				case *schemas.DetachVolume:
					c.VolumeID = "vm1-data-1"
				case *schemas.ResizeVolume:
					c.VolumeID, c.SizeGB = "vm1-data-1", 20
				case *schemas.SnapshotVolume:
					c.VolumeID = "vm1-data-1"
				case *schemas.DeleteVolume:
					c.VolumeID = "vm1-data-2"
				}
				ns, out := m.Step(s, schemas.Record{Topic: schemas.TopicVmCommands, Key: "vm1", Value: v}, now)
				if len(out) == 0 {
					t.Fatalf("%s: no output", name)
				}
				types := make([]string, len(out))
				for i, o := range out {
					types[i] = schemas.TypeName(o.Value)
				}
				switch {
				case task != "" && action == ActTerminate:
					if !slices.Contains(types, "JobCancelled") {
						t.Errorf("%s: terminate did not cancel the running job: %v", name, types)
					}
				case task != "":
					a, ok := out[0].Value.(*schemas.JobAccepted)
					if !ok || !a.Queued || len(rare(ns).Queue) != 1 {
						t.Errorf("%s: not queued behind the running job: %v", name, types)
					}
				case IsAllowed(action, vmState, ""):
					a, ok := out[0].Value.(*schemas.JobAccepted)
					if !ok || a.Queued || slices.Contains(types, "JobRejected") || ns.Epoch != 6 {
						t.Errorf("%s: allowed action did not start a job: %v", name, types)
					}
				default:
					r, ok := out[0].Value.(*schemas.JobRejected)
					if len(out) != 1 || !ok || r.Reason != "InvalidState" || !slices.Equal(r.AllowedActions, AllowedActions(vmState, "")) {
						t.Errorf("%s: want one JobRejected{InvalidState}, got %v", name, types)
					}
				}
			}
		}
	}
}
