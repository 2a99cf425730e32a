package vm

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// FuzzMachine feeds random sequences of inputs and timer runs to one VM and
// checks the invariants that hold whatever happens: no panic, a VM with no
// job has an empty task_state and no queue, one job at a time, every
// accepted job ends exactly once, outputs encode, and the state survives
// its encoding and is never modified in place.
func FuzzMachine(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 3, 1, 4, 0, 7, 20})
	f.Add([]byte{0, 0, 0, 0, 2, 1, 0, 3, 4, 1, 1, 3, 1, 0, 4, 0, 0, 1, 0, 3, 2, 1, 3, 9, 9, 9})
	f.Add([]byte{0, 0, 0, 1, 0, 3, 1, 4, 0, 0, 2, 3, 0, 3, 1, 7, 255, 7, 255, 7, 255})
	f.Add([]byte{0, 0, 0, 0, 1, 2, 0, 2, 4, 1, 5, 3, 0, 1, 6, 0, 7, 8, 7, 200, 0, 3, 5})
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRun(t, data) })
}

// TestFuzzSeeds runs deterministic pseudo-random sequences in every plain
// test run, beyond the seed corpus.
func TestFuzzSeeds(t *testing.T) {
	x := uint32(2463534242)
	for range 300 {
		data := make([]byte, 120)
		for i := range data {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			data[i] = byte(x)
		}
		fuzzRun(t, data)
	}
}

// fuzzCommands are the commands of the action table: first the ones the
// seeds above were written for, in the order they pick them by, then any
// other row.
var fuzzCommands = func() []string {
	out := []string{ActDeploy, ActStart, ActStop, ActTerminate, ActReboot, ActResize, ActPause, ActUnpause,
		ActSuspend, ActResume, ActRescue, ActUnrescue, ActRebuild, ActSnapshot, ActMigrate, ActConfirmResize, ActRevertResize}
	for _, a := range actionTable {
		if a.name != ActHARestart && !slices.Contains(out, a.name) {
			out = append(out, a.name)
		}
	}
	return out
}()

func fuzzRun(t *testing.T, data []byte) {
	// Long inputs add nothing but time: every timer run round-trips the
	// state through Avro.
	if len(data) > 300 {
		data = data[:300]
	}
	m := New(Config{JobTimeout: 120 * time.Second, WakeupInterval: 10 * time.Second, StallThreshold: 30 * time.Second,
		ResendAfter: 10 * time.Second, ExpungeDelay: 1000 * time.Second})
	var s *schemas.VmRecord
	now := time.UnixMilli(1_000_000).UTC()
	ended := map[string]int{}
	accepted := map[string]bool{}
	pos := 0
	next := func() byte {
		if pos >= len(data) {
			return 0
		}
		pos++
		return data[pos-1]
	}
	hosts := []string{"h1", "h2", "h3"}
	powers := []string{schemas.PowerOn, schemas.PowerOff, schemas.PowerPaused, schemas.PowerUnknown, schemas.PowerSusp}
	var in any
	apply := func(step func(*schemas.VmRecord) (*schemas.VmRecord, []schemas.Record)) {
		before := clone(s)
		ns, outs := step(s)
		if !reflect.DeepEqual(before, s) {
			t.Fatalf("input state modified in place")
		}
		if d, ok := in.(*schemas.HostDown); ok && ns != nil && ns.Job != nil && ns.Job.Wait.Kind == waitAnswer && ns.Job.Wait.HostID == d.HostID {
			// A job never goes on waiting on a host that is down.
			t.Fatalf("job %s still waits on host %s after HostDown", ns.Job.JobID, d.HostID)
		}
		for _, o := range outs {
			checkOutput(t, o)
			switch v := o.Value.(type) {
			case *schemas.PlaceVm:
				// An adopt claims where the VM is, and only there.
				if v.Adopt && (ns == nil || v.HostID == "" || v.HostID != ns.HostID) {
					t.Fatalf("adopt on %q, the VM is on %v", v.HostID, ns)
				}
			case *schemas.JobAccepted:
				if accepted[v.JobID] {
					t.Fatalf("job %s accepted twice", v.JobID)
				}
				accepted[v.JobID] = true
			case *schemas.JobStepped:
				// A job that ended (a cancelled one above all) never
				// steps again.
				if ended[v.JobID] > 0 || !accepted[v.JobID] {
					t.Fatalf("job %s stepped after it ended or before it was accepted", v.JobID)
				}
			case *schemas.JobSucceeded:
				ended[v.JobID]++
			case *schemas.JobFailed:
				ended[v.JobID]++
			case *schemas.JobCancelled:
				ended[v.JobID]++
			case *schemas.JobRejected:
				if accepted[v.JobID] {
					ended[v.JobID]++
				}
			}
		}
		for id, n := range ended {
			if n > 1 {
				t.Fatalf("job %s ended %d times", id, n)
			}
		}
		s = restore(t, ns)
		checkInvariants(t, s)
		if s == nil {
			// Expunged (or never created): a later Deploy starts afresh.
			for id := range accepted {
				if ended[id] != 1 {
					t.Fatalf("job %s of an expunged VM never ended", id)
				}
			}
			accepted, ended = map[string]bool{}, map[string]int{}
		}
	}
	for pos < len(data) {
		op := next() % 11
		in = nil
		switch op {
		case 0:
			v, _ := schemas.New(fuzzCommands[int(next())%len(fuzzCommands)])
			*v.(schemas.VmCommandRecord).Common() = schemas.VmCommand{CommandID: fmt.Sprintf("c%d", next()%6), VmID: "vm1", Account: "acme"}
			switch d := v.(type) {
			case *schemas.Deploy:
				b := next()
				d.ZoneID, d.Name, d.HA = "z1", "web", b&1 == 1
				if b&2 == 2 {
					// With storage: a template, a data disk and a NIC.
					d.Template = schemas.Template{ID: "t1", SizeMB: 2048}
					d.DataDiskMB, d.NetworkIDs = 1024, []string{"n1"}
				}
			case *schemas.AttachVolume:
				d.VolumeID, d.SizeGB = fuzzVolume(s, next()), int64(next()%3)
			case *schemas.DetachVolume:
				d.VolumeID = fuzzVolume(s, next())
			case *schemas.ResizeVolume:
				d.VolumeID, d.SizeGB = fuzzVolume(s, next()), int64(next()%4)
			case *schemas.SnapshotVolume:
				d.VolumeID = fuzzVolume(s, next())
			case *schemas.DeleteVolume:
				d.VolumeID = fuzzVolume(s, next())
			case *schemas.Resize:
				d.Offering = schemas.Offering{Name: "big", CPU: 4, MemoryMB: 4096}
			}
			in = v
		case 1, 2, 3:
			var req string
			var epoch int64
			if s != nil {
				epoch = s.Epoch
			}
			if s != nil && s.Job != nil {
				req = s.Job.Wait.RequestID
			}
			b := next()
			if b&1 == 1 {
				epoch--
			}
			if b&2 == 2 {
				req = "other"
				if b&32 == 32 {
					// The answer to an adopt the VM sent after an
					// out-of-band change.
					req = fmt.Sprintf("vm1-adopt-%d", now.UnixMilli())
				}
			}
			host := hosts[int(b>>2)%len(hosts)]
			switch op {
			case 1:
				pd := &schemas.PlacementDecided{VmID: "vm1", RequestID: req, Epoch: epoch, HostID: host}
				if s != nil && s.Storage != nil && b&64 == 64 {
					// Placement echoes the volumes and NICs with their
					// pools and addresses.
					for _, v := range s.Storage.Volumes {
						v.PoolID, v.PoolPath = "p1", "/pools/p1"
						pd.Volumes = append(pd.Volumes, v)
					}
					for _, n := range s.Storage.Nics {
						n.IP, n.MAC = "10.0.0.5", "02:00:00:00:00:05"
						pd.Nics = append(pd.Nics, n)
					}
				}
				in = pd
			case 2:
				in = &schemas.PlacementFailed{VmID: "vm1", RequestID: req, Epoch: epoch, Reason: "full"}
			default:
				in = &schemas.AgentAnswer{VmID: "vm1", CommandID: req, Epoch: epoch, HostID: host, OK: b&16 == 0, AnsweredAt: now.UnixMilli() - int64(b%4)*1000}
			}
		case 4:
			b := next()
			in = &schemas.PowerReport{VmID: "vm1", HostID: hosts[int(b)%len(hosts)], PowerState: powers[int(b>>2)%len(powers)],
				ReportSeq: int64(next() % 16), ReportedAt: now.UnixMilli() - int64(b%3)*1000}
		case 5:
			b := next()
			in = &schemas.HostDown{VmID: "vm1", HostID: hosts[int(b)%len(hosts)]}
			if b&128 == 128 {
				in = &schemas.StoragePoolDown{VmID: "vm1", PoolID: "p1", ZoneID: "z1"}
			}
		case 6:
			in = &schemas.VmMissingFromHost{VmID: "vm1", HostID: hosts[int(next())%len(hosts)], ReportSeq: int64(next() % 16)}
		case 7:
			// A cancel of one of the command ids the commands use: running,
			// queued, ended or never sent.
			in = &schemas.CancelJob{CommandID: "x", VmID: "vm1", JobID: fmt.Sprintf("c%d", next()%6), Account: "acme", By: "key k1 of account acme"}
		default:
			b := next()
			now = now.Add(time.Duration(b) * time.Second)
			if b > 250 {
				now = now.Add(2000 * time.Second)
			}
			for range 10000 {
				w := m.Wake(s)
				if w.IsZero() || w.After(now) {
					break
				}
				apply(func(s *schemas.VmRecord) (*schemas.VmRecord, []schemas.Record) { return m.Tick(s, "vm1", w) })
			}
			continue
		}
		apply(func(s *schemas.VmRecord) (*schemas.VmRecord, []schemas.Record) {
			return m.Step(s, schemas.Record{Topic: "in", Key: "vm1", Value: in}, now)
		})
	}
	// Every accepted job that has not ended is running or queued.
	open := map[string]bool{}
	if s != nil {
		if id := jobID(s); id != "" {
			open[id] = true
		}
		for _, q := range rare(s).Queue {
			open[q.CommandID] = true
		}
	}
	for id := range accepted {
		if (ended[id] == 0) != open[id] {
			t.Fatalf("job %s: ended %d times, open %v", id, ended[id], open[id])
		}
	}
}

// fuzzVolume picks a volume id for a volume command: one of the VM's, an
// unknown one or none.
func fuzzVolume(s *schemas.VmRecord, b byte) string {
	var ids []string
	if s != nil && s.Storage != nil {
		for _, v := range s.Storage.Volumes {
			ids = append(ids, v.VolumeID)
		}
	}
	ids = append(ids, "", "nope")
	return ids[int(b)%len(ids)]
}
