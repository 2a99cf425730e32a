package vm

import (
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// Snapshots are resources of the VM: the record keeps the name and time of
// each snapshot its host took (VmRecord.Snapshots, nil for none), the host
// keeps the data. Snapshot, RevertSnapshot and DeleteSnapshot are simple
// actions (simple.go); their rows' checks refuse a name the VM has
// already, or does not have, as a JobRejected before anything is sent. A
// snapshot enters the list on the agent's ok answer only: one whose answer
// never came is not listed, and taking it again under its name overwrites
// it on the host. Revert wants the VM Stopped, as CloudStack's
// revertToVMSnapshot does for disk-only snapshots: the disk changes under
// no running guest, and the next Start boots from it.

// paramSnapshotName is the snapshot parameter of the three actions.
const paramSnapshotName = "snapshot_name"

// snapshotFlow is Snapshot's simple flow; a snapshot asked for without a
// name is named by its job id, which is unique.
func snapshotFlow() flow {
	f := simple(simpleAction{task: TaskSnapshotting, step: "snapshot", text: "taking a snapshot of the VM",
		done: snapshotTaken})
	start := f.start
	f.start = func(t *tx, cmd any) {
		if t.s.Job.Params[paramSnapshotName] == "" {
			t.params()[paramSnapshotName] = t.s.Job.JobID
		}
		start(t, cmd)
	}
	return f
}

// snapshotOf returns the snapshot name a command names, the command id
// for a Snapshot that names none.
func snapshotOf(cmd any) string {
	var name, unnamed string
	switch c := cmd.(type) {
	case *schemas.Snapshot:
		name, unnamed = c.SnapshotName, c.CommandID
	case *schemas.RevertSnapshot:
		name = c.SnapshotName
	case *schemas.DeleteSnapshot:
		name = c.SnapshotName
	}
	if name == "" {
		return unnamed
	}
	return name
}

// hasSnapshot reports whether the VM keeps a snapshot of that name.
func hasSnapshot(s *schemas.VmRecord, name string) bool {
	return slices.ContainsFunc(snapshotsOf(s), func(x schemas.VmSnapshot) bool { return x.Name == name })
}

// snapshotsOf is the VM's snapshots, oldest first; nil for none.
func snapshotsOf(s *schemas.VmRecord) []schemas.VmSnapshot {
	if l := rare(s).Snapshots; l != nil {
		return l.Items
	}
	return nil
}

// snapshotNew refuses a Snapshot whose name the VM has already.
func snapshotNew(s *schemas.VmRecord, cmd any) (reason, detail string) {
	name := snapshotOf(cmd)
	if hasSnapshot(s, name) {
		return schemas.CodeAlreadyExists, "VM " + s.VmID + " has a snapshot named " + quote(name) + " already"
	}
	if strings.HasPrefix(name, schemas.VolumeSnapshotPrefix) {
		// A VM snapshot and a volume snapshot share the names inside a
		// disk's file: the prefix is the volume snapshots' own.
		return schemas.CodeInvalid, "a VM snapshot name cannot begin with " + quote(schemas.VolumeSnapshotPrefix) + ", which names volume snapshots inside the disk files"
	}
	return "", ""
}

// snapshotKnown refuses a command for a snapshot the VM does not have.
func snapshotKnown(s *schemas.VmRecord, cmd any) (reason, detail string) {
	name := snapshotOf(cmd)
	if name == "" {
		return schemas.CodeInvalid, "snapshot_name is empty"
	}
	if hasSnapshot(s, name) {
		return "", ""
	}
	names := make([]string, len(snapshotsOf(s)))
	for i, x := range snapshotsOf(s) {
		names[i] = quote(x.Name)
	}
	has := "it has none"
	if len(names) > 0 {
		has = "it has " + strings.Join(names, ", ")
	}
	return schemas.CodeNotFound, "VM " + s.VmID + " has no snapshot named " + quote(name) + "; " + has
}

// snapshotRevertible is snapshotKnown for a revert, which also needs the
// host that holds the VM's disk.
func snapshotRevertible(s *schemas.VmRecord, cmd any) (reason, detail string) {
	if reason, detail = snapshotKnown(s, cmd); reason != "" {
		return reason, detail
	}
	if s.HostID == "" {
		return schemas.CodeInvalidState, "VM " + s.VmID + " has no host holding its disk"
	}
	return "", ""
}

func quote(name string) string { return `"` + name + `"` }

// snapshotTaken records the snapshot of the job that just succeeded.
func snapshotTaken(t *tx) {
	s := t.s
	name := s.Job.Params[paramSnapshotName]
	s.Rare.Snapshots = &schemas.SnapshotList{Items: append(slices.Clone(snapshotsOf(s)), schemas.VmSnapshot{Name: name, TakenAt: t.ms})}
	t.event(&schemas.SnapshotTaken{VmID: s.VmID, Account: s.Account, Name: name, JobID: s.Job.JobID, At: t.ms})
}

// snapshotDeleted forgets the snapshot of the job that just succeeded.
func snapshotDeleted(t *tx) {
	t.dropSnapshots(func(name string) bool { return name == t.s.Job.Params[paramSnapshotName] })
}

// dropSnapshots forgets the snapshots whose names drop selects, each with a
// SnapshotDeleted of the running job.
func (t *tx) dropSnapshots(drop func(name string) bool) {
	s := t.s
	var kept []schemas.VmSnapshot
	for _, x := range snapshotsOf(s) {
		if !drop(x.Name) {
			kept = append(kept, x)
			continue
		}
		t.event(&schemas.SnapshotDeleted{VmID: s.VmID, Account: s.Account, Name: x.Name, JobID: s.Job.JobID, At: t.ms})
	}
	s.Rare.Snapshots = nil
	if len(kept) > 0 {
		s.Rare.Snapshots = &schemas.SnapshotList{Items: kept}
	}
}

// The agent commands of the snapshot actions.

func snapshotVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.SnapshotVm{AgentCommand: *ac, SnapshotName: t.s.Job.Params[paramSnapshotName]}
}

func revertSnapshotVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.RevertSnapshotVm{AgentCommand: *ac, SnapshotName: t.s.Job.Params[paramSnapshotName]}
}

func deleteSnapshotVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.DeleteSnapshotVm{AgentCommand: *ac, SnapshotName: t.s.Job.Params[paramSnapshotName]}
}
