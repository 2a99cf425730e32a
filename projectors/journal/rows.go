package journal

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vmplane/vmplane/schemas"
)

// Seq values of the rows that are not steps: the accepted row reads first,
// the end row last, whatever the number of steps.
const (
	acceptedSeq = 0
	endSeq      = 1_000_000
)

// Kinds of job_journal rows.
const (
	KindAccepted  = "accepted"
	KindStepped   = "stepped"
	KindSucceeded = "succeeded"
	KindFailed    = "failed"
	KindCancelled = "cancelled"
	KindRejected  = "rejected"
)

// jobRow is one row of job_journal, in the column order of insertJobs.
type jobRow struct {
	JobID, Kind                    string
	Seq                            uint32
	VmID, Account, JobType, Origin string
	Step, TaskState, Text, Obj     string
	Reason, Detail, VmState        string
	AtMs                           int64
	Topic                          string
	Partition                      int32
	Offset                         int64
	// HostID is the host the step names in its obj ("host_id"), if any.
	HostID string
	// StartedMs is, on an end row, when the job started running (Unix
	// milliseconds; AtMs for a job that never ran, 0 when the end event
	// predates the field); 0 on other rows.
	StartedMs int64
	// ErrorCode is, on an end row, the code of a failure, cancel or
	// rejection (schemas.ErrorCode); empty on other rows.
	ErrorCode string
	// Caller is who asked for the job, on its accepted or rejected row
	// (what those events carry); empty on other rows and for records
	// from before the field.
	Caller schemas.Caller
}

// eventRow is one row of vm_events, in the column order of insertEvents.
type eventRow struct {
	VmID, Type, JobID, Payload             string
	AtMs                                   int64
	VmState, TaskState, PowerState, HostID string
	Topic                                  string
	Partition                              int32
	Offset                                 int64
	// Reason is why the VM changed or the job ended, where the event says.
	Reason string
}

// rowsOf turns one decoded record of vm.events.v1 into its vm_events row,
// its payload rendered into ps, and, for a job event, its job_journal row
// into *job (isJob). It is pure: the same record always gives the same
// rows, which is what makes a retried batch harmless.
func rowsOf(r schemas.Record, ps *payloads, job *jobRow) (isJob bool, ev eventRow, err error) {
	payload, err := ps.render(r.Value)
	if err != nil {
		return false, eventRow{}, fmt.Errorf("render %s as JSON: %w", schemas.TypeName(r.Value), err)
	}
	isJob, ev, err = rowsWithoutPayload(r, job)
	ev.Payload = payload
	return isJob, ev, err
}

// callerOf is who asked for a job, as its acceptance or rejection says;
// the job's other events name nobody.
func callerOf(v any) schemas.Caller {
	switch e := v.(type) {
	case *schemas.JobAccepted:
		return e.Caller
	case *schemas.JobRejected:
		return e.Caller
	}
	return schemas.Caller{}
}

// vmEvent fills the event row of a record that is no job's event.
func vmEvent(ev *eventRow, v any) {
	switch v := v.(type) {
	case *schemas.VmStateChanged:
		ev.VmID, ev.JobID, ev.AtMs = v.VmID, v.JobID, v.UpdatedAt
		ev.VmState, ev.TaskState, ev.PowerState, ev.HostID = v.VmState, v.TaskState, v.PowerState, v.HostID
		ev.Reason = v.Reason
	case *schemas.PowerStateObserved:
		ev.VmID, ev.AtMs, ev.PowerState, ev.HostID = v.VmID, v.At, v.PowerState, v.HostID
	case *schemas.AlertRaised:
		ev.VmID, ev.JobID, ev.AtMs, ev.HostID = v.VmID, v.JobID, v.At, v.HostID
		ev.Reason = v.Kind + ": " + v.Message
	case *schemas.VmExpunged:
		ev.VmID, ev.AtMs = v.VmID, v.At
	case *schemas.SnapshotTaken:
		ev.VmID, ev.JobID, ev.AtMs, ev.Reason = v.VmID, v.JobID, v.At, "snapshot "+strconv.Quote(v.Name)+" taken"
	case *schemas.SnapshotDeleted:
		ev.VmID, ev.JobID, ev.AtMs, ev.Reason = v.VmID, v.JobID, v.At, "snapshot "+strconv.Quote(v.Name)+" deleted"
	case *schemas.VolumeChanged, *schemas.NicChanged, *schemas.VolumeSnapshotTaken:
		storageEvent(ev, v)
	}
}

// rowsWithoutPayload is rowsOf but for the event's payload, left empty.
// The job row is written in place (as every other row of the batch), not
// allocated for each record.
func rowsWithoutPayload(r schemas.Record, into *jobRow) (bool, eventRow, error) {
	ev := eventRow{
		VmID: r.Key, Type: schemas.TypeName(r.Value), AtMs: r.TimestampMs,
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}
	var job *jobRow
	newJob := func(ref schemas.JobRef, kind string, seq uint32) *jobRow {
		ev.JobID = ref.JobID
		ev.VmID = ref.VmID
		ev.AtMs = ref.At
		*into = jobRow{
			JobID: ref.JobID, Kind: kind, Seq: seq,
			VmID: ref.VmID, Account: ref.Account, JobType: ref.JobType, Origin: ref.Origin,
			AtMs: ref.At, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			ErrorCode: schemas.ErrorCode(r.Value), Caller: callerOf(r.Value),
		}
		return into
	}
	switch v := r.Value.(type) {
	case *schemas.JobAccepted:
		job = newJob(v.JobRef, KindAccepted, acceptedSeq)
		// What json.Marshal makes of {"queued": …, "position": …}: keys sorted.
		job.Obj = `{"position":` + strconv.Itoa(int(v.Position)) + `,"queued":` + strconv.FormatBool(v.Queued) + `}`
		job.Text = "accepted"
		if v.Queued {
			job.Text = fmt.Sprintf("queued at position %d", v.Position)
		}
	case *schemas.JobStepped:
		if v.Seq < 1 {
			return false, eventRow{}, fmt.Errorf("job %s: step seq %d, want 1 or more", v.JobID, v.Seq)
		}
		job = newJob(v.JobRef, KindStepped, uint32(v.Seq))
		job.Step, job.TaskState, job.Text, job.Obj = v.Step, v.TaskState, v.Text, v.Obj
		job.HostID = hostOf(v.Obj)
		ev.TaskState, ev.HostID, ev.Reason = v.TaskState, job.HostID, v.Text
	case *schemas.JobSucceeded:
		job = newJob(v.JobRef, KindSucceeded, endSeq)
		job.VmState, job.Text = v.VmState, "succeeded, VM is "+v.VmState
		job.StartedMs = v.StartedAt
		ev.VmState = v.VmState
	case *schemas.JobFailed:
		job = newJob(v.JobRef, KindFailed, endSeq)
		job.Reason, job.Detail, job.VmState, job.Text = v.Reason, v.Detail, v.VmState, v.Detail
		job.StartedMs = v.StartedAt
		ev.VmState, ev.Reason = v.VmState, v.Reason
	case *schemas.JobCancelled:
		job = newJob(v.JobRef, KindCancelled, endSeq)
		job.Reason, job.Detail, job.VmState, job.Text = v.Reason, v.Detail, v.VmState, v.Reason
		job.TaskState = v.TaskState
		if v.By != "" {
			// Who cancelled and at which step, for the journal's reader.
			job.Obj = mustJSON(map[string]any{"by": v.By, "step": v.Step, "task_state": v.TaskState})
		}
		job.StartedMs = v.StartedAt
		ev.VmState, ev.Reason = v.VmState, v.Reason
	case *schemas.JobRejected:
		job = newJob(v.JobRef, KindRejected, endSeq)
		job.Reason, job.Detail, job.Text = v.Reason, v.Detail, v.Detail
		job.StartedMs = v.At // never ran
		job.Obj = mustJSON(map[string]any{"allowed_actions": v.AllowedActions})
		ev.Reason = v.Reason
	default:
		vmEvent(&ev, v)
	}
	// An event without a time of its own falls back to the record's Kafka
	// timestamp, which the log keeps, so a replay still yields the same row.
	if ev.AtMs <= 0 {
		ev.AtMs = r.TimestampMs
	}
	if job != nil && job.AtMs <= 0 {
		job.AtMs = r.TimestampMs
	}
	return job != nil, ev, nil
}

// hostOf is the "host_id" a step's obj names; "" when it names none or is
// not a JSON object: what json.Unmarshal into a struct with a HostID
// string field tagged host_id gives, or "" when it fails.
func hostOf(obj string) string {
	// Most steps name no host: skip the decoding when no key can be
	// "host_id", which needs an underscore, literal or escaped.
	if !strings.Contains(obj, "_") && !strings.Contains(obj, `\u`) {
		return ""
	}
	if h, ok := hostOfPlain(obj); ok {
		return h
	}
	var o struct {
		HostID string `json:"host_id"`
	}
	if json.Unmarshal([]byte(obj), &o) != nil {
		return ""
	}
	return o.HostID
}

// hostOfPlain is hostOf for an obj of ASCII without backslashes, which
// is every obj the VM processor writes, read without decoding into a
// struct; ok is false for any other obj. Like json.Unmarshal it takes the
// top level's keys case-insensitively, the last one wins, a null leaves
// the value as it was, and a value of another type fails the whole obj.
func hostOfPlain(obj string) (host string, ok bool) {
	for i := 0; i < len(obj); i++ {
		if obj[i] >= utf8.RuneSelf || obj[i] == '\\' {
			return "", false
		}
	}
	if !json.Valid([]byte(obj)) {
		return "", true
	}
	i := skipSpace(obj, 0)
	if obj[i] != '{' {
		return "", true // json.Unmarshal fails on a non-object
	}
	i = skipSpace(obj, i+1)
	for obj[i] != '}' {
		end := strings.IndexByte(obj[i+1:], '"') + i + 1 // valid JSON: a key string
		key := obj[i+1 : end]
		i = skipSpace(obj, end+1) + 1 // past the colon
		i = skipSpace(obj, i)
		start := i
		i = skipValue(obj, i)
		if strings.EqualFold(key, "host_id") {
			switch v := obj[start:i]; v[0] {
			case '"':
				host = v[1 : len(v)-1]
			case 'n': // null
			default:
				return "", true
			}
		}
		i = skipSpace(obj, i)
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return host, true
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipValue is the end of the valid JSON value (without backslashes) that
// starts at i.
func skipValue(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			i += strings.IndexByte(s[i+1:], '"') + 1
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// mustJSON renders maps of plain values, which cannot fail to encode.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// dateTime is the DateTime column's value of a Unix millisecond time.
func dateTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// storageEvent fills the vm_events row of a change of a VM's volumes or
// NICs: the history of a VM says what its disks and addresses became.
func storageEvent(ev *eventRow, v any) {
	switch v := v.(type) {
	case *schemas.VolumeChanged:
		vol := v.Volume
		ev.VmID, ev.JobID, ev.AtMs = v.VmID, v.JobID, v.At
		ev.Reason = fmt.Sprintf("%s volume %s (%s, %d MiB on pool %s) %s", vol.Kind, vol.VolumeID, strconv.Quote(vol.Name),
			vol.SizeMB, orNone(vol.PoolID), vol.State)
		if v.Deleted {
			ev.Reason = fmt.Sprintf("%s volume %s deleted", vol.Kind, vol.VolumeID)
		}
	case *schemas.NicChanged:
		ev.VmID, ev.AtMs = v.VmID, v.At
		ev.Reason = fmt.Sprintf("NIC %s on network %s: %s", v.Nic.NicID, v.Nic.NetworkID, orNone(v.Nic.IP))
		if v.Released {
			ev.Reason = fmt.Sprintf("NIC %s released %s", v.Nic.NicID, orNone(v.Nic.IP))
		}
	case *schemas.VolumeSnapshotTaken:
		ev.VmID, ev.JobID, ev.AtMs = v.VmID, v.JobID, v.At
		ev.Reason = "snapshot " + strconv.Quote(v.SnapshotName) + " of volume " + v.VolumeID + " taken"
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
