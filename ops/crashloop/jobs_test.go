package crashloop

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// result is what one invariant found: a summary line with its counts and
// the failures, each with its evidence.
type result struct {
	name     string
	summary  string
	failures []string
}

func (r *result) failf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// jobTrace is one job as vm.events.v1 tells it.
type jobTrace struct {
	vm, typ, origin string
	accepted        bool     // JobAccepted seen
	ends            []string // "JobSucceeded at vm.events.v1/3@120"
	endKinds        []string // succeeded, failed, cancelled, rejected
	endAt           int64    // the first end's time, Unix ms
	lastStep        string
}

// jobLog is what the harness reads of vm.events.v1 and vm.commands.v1.
type jobLog struct {
	jobs     map[string]*jobTrace
	commands map[string]string // command_id → "vm.commands.v1/p@o"
	read     readStats
}

func readJobs(ctx context.Context, st *stack) (*jobLog, error) {
	codec := schemas.NewCodec(nil)
	l := &jobLog{jobs: map[string]*jobTrace{}, commands: map[string]string{}}
	var decodeErrs int
	stats, err := readLog(ctx, st.kcfg, st.admin, []string{schemas.TopicVmEvents, schemas.TopicVmCommands}, func(kr *kgo.Record) {
		where := fmt.Sprintf("%s/%d@%d", kr.Topic, kr.Partition, kr.Offset)
		if kr.Topic == schemas.TopicVmCommands {
			if id := kafka.Header(kr, "command_id"); id != "" {
				l.commands[id] = where
			}
			return
		}
		rec, err := kafka.FromKafka(ctx, codec, kr)
		if err != nil {
			decodeErrs++
			return
		}
		ref, kind := jobRefOf(rec.Value)
		if ref == nil {
			return
		}
		j := l.jobs[ref.JobID]
		if j == nil {
			j = &jobTrace{vm: ref.VmID, typ: ref.JobType, origin: ref.Origin}
			l.jobs[ref.JobID] = j
		}
		switch v := rec.Value.(type) {
		case *schemas.JobAccepted:
			j.accepted = true
		case *schemas.JobStepped:
			j.lastStep = fmt.Sprintf("step %d %s: %s", v.Seq, v.TaskState, v.Text)
		default:
			if len(j.ends) == 0 {
				j.endAt = ref.At
			}
			j.ends = append(j.ends, schemas.TypeName(rec.Value)+" at "+where)
			j.endKinds = append(j.endKinds, kind)
		}
	})
	l.read = stats
	if err == nil && decodeErrs > 0 {
		err = fmt.Errorf("%d records of vm.events.v1 do not decode", decodeErrs)
	}
	return l, err
}

// jobRefOf returns the job of a job event and, for an end, its kind as the
// journal names it.
func jobRefOf(v any) (*schemas.JobRef, string) {
	switch v := v.(type) {
	case *schemas.JobAccepted:
		return &v.JobRef, ""
	case *schemas.JobStepped:
		return &v.JobRef, ""
	case *schemas.JobSucceeded:
		return &v.JobRef, "succeeded"
	case *schemas.JobFailed:
		return &v.JobRef, "failed"
	case *schemas.JobCancelled:
		return &v.JobRef, "cancelled"
	case *schemas.JobRejected:
		return &v.JobRef, "rejected"
	}
	return nil, ""
}

// checkJobs is invariant 1: every job the gateway accepted (202) ended
// exactly once in vm.events.v1, read_committed; so did every job the
// processors accepted on their own (maintenance migrations, HA restarts).
func checkJobs(l *jobLog, acc []accepted) result {
	r := result{name: "1 every accepted job ended exactly once (vm.events.v1, read_committed)"}
	var once, never, lost, unprocessed, stuck, twice int
	var durations []time.Duration
	var slowest time.Duration
	var slowestJob string
	for _, a := range acc {
		j := l.jobs[a.id]
		switch {
		case j == nil || len(j.ends) == 0:
			never++
			where, inLog := l.commands[a.id]
			switch {
			case !inLog:
				lost++
				r.failf("job %s (%s of VM %s, 202 at %.1fs) never ended: its command is not in vm.commands.v1 (acknowledged, then lost)", a.id, a.kind, a.vmID, a.at.Seconds())
			case j == nil || !j.accepted:
				unprocessed++
				r.failf("job %s (%s of VM %s, 202 at %.1fs) never ended: its command is at %s but no event of the job exists", a.id, a.kind, a.vmID, a.at.Seconds(), where)
			default:
				stuck++
				r.failf("job %s (%s of VM %s, 202 at %.1fs) never ended: accepted, %s", a.id, a.kind, a.vmID, a.at.Seconds(), orNone(j.lastStep, "no step"))
			}
		case len(j.ends) > 1:
			twice++
			r.failf("job %s (%s of VM %s) ended %d times: %s", a.id, a.kind, a.vmID, len(j.ends), strings.Join(j.ends, ", "))
		default:
			once++
			took := time.Duration(j.endAt-a.wall.UnixMilli()) * time.Millisecond
			durations = append(durations, took)
			if took > slowest {
				slowest, slowestJob = took, fmt.Sprintf("%s %s of %s", a.id, a.kind, a.vmID)
			}
		}
	}
	slices.Sort(durations)
	latency := "none ended"
	if n := len(durations); n > 0 {
		latency = fmt.Sprintf("202 to end p50 %s, p99 %s, max %s (%s)", durations[(n-1)/2].Round(time.Millisecond),
			durations[(n-1)*99/100].Round(time.Millisecond), slowest.Round(time.Millisecond), slowestJob)
	}
	accSet := map[string]bool{}
	for _, a := range acc {
		accSet[a.id] = true
	}
	origins := map[string]int{}
	ends := map[string]int{}
	var otherNever, otherTwice int
	ids := make([]string, 0, len(l.jobs))
	for id := range l.jobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		j := l.jobs[id]
		origins[j.origin]++
		for _, k := range j.endKinds {
			ends[k]++
		}
		if accSet[id] {
			continue
		}
		switch {
		case j.accepted && len(j.ends) == 0:
			otherNever++
			r.failf("job %s (%s %s of VM %s, not from this load's 202s) never ended: %s", id, j.origin, j.typ, j.vm, orNone(j.lastStep, "no step"))
		case len(j.ends) > 1:
			otherTwice++
			r.failf("job %s (%s %s of VM %s) ended %d times: %s", id, j.origin, j.typ, j.vm, len(j.ends), strings.Join(j.ends, ", "))
		}
	}
	r.summary = fmt.Sprintf("202s %d: ended once %d, never %d (command lost %d, never processed %d, stuck %d), more than once %d; %s; "+
		"jobs in vm.events.v1 %d (%s), ends %s; other jobs never ended %d, ended twice %d; read %d records%s",
		len(acc), once, never, lost, unprocessed, stuck, twice, latency, len(l.jobs), countsText(origins), countsText(ends),
		otherNever, otherTwice, l.read.records, silentText(l.read))
	return r
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func silentText(s readStats) string {
	if len(s.silent) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d partitions end in offsets a read_committed consumer is never handed, e.g. %s)", len(s.silent), s.silent[0])
}
