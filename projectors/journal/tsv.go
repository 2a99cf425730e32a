package journal

import (
	"strconv"

	"github.com/vmplane/vmplane/schemas"
)

// JobJournalColumns are the columns of job_journal in the order
// AppendJobJournalTSV writes them: the column list of an
// INSERT INTO job_journal (...) FORMAT TabSeparated.
const JobJournalColumns = `job_id, kind, seq, vm_id, account, job_type, origin, step, task_state, "text", obj, reason, detail, vm_state, ts, at_ms, topic, "partition", "offset", host_id, started_ms, error_code, caller_account, caller_key_id, caller_request_id`

// AppendJobJournalTSV appends the job_journal rows the projector writes for
// recs (records of vm.events.v1; others bring none) as TabSeparated lines,
// and returns them with the number of rows. It is the bulk load of the same
// rows without Kafka, for benchmarks that need a large journal.
func AppendJobJournalTSV(dst []byte, recs []schemas.Record) ([]byte, int, error) {
	n := 0
	for _, r := range recs {
		if r.Topic != schemas.TopicVmEvents {
			continue
		}
		var j jobRow
		isJob, _, err := rowsWithoutPayload(r, &j)
		if err != nil {
			return dst, n, err
		}
		if !isJob {
			continue
		}
		n++
		for i, s := range []string{j.JobID, j.Kind} {
			if i > 0 {
				dst = append(dst, '\t')
			}
			dst = appendTSVString(dst, s)
		}
		dst = append(dst, '\t')
		dst = strconv.AppendUint(dst, uint64(j.Seq), 10)
		for _, s := range []string{j.VmID, j.Account, j.JobType, j.Origin, j.Step, j.TaskState, j.Text, j.Obj, j.Reason, j.Detail, j.VmState} {
			dst = append(dst, '\t')
			dst = appendTSVString(dst, s)
		}
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, seconds(j.AtMs), 10)
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, j.AtMs, 10)
		dst = append(dst, '\t')
		dst = appendTSVString(dst, j.Topic)
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, int64(j.Partition), 10)
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, j.Offset, 10)
		dst = append(dst, '\t')
		dst = appendTSVString(dst, j.HostID)
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, j.StartedMs, 10)
		for _, s := range []string{j.ErrorCode, j.Caller.Account, j.Caller.KeyID, j.Caller.RequestID} {
			dst = append(dst, '\t')
			dst = appendTSVString(dst, s)
		}
		dst = append(dst, '\n')
	}
	return dst, n, nil
}

// appendTSVString appends s escaped for TabSeparated.
func appendTSVString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
