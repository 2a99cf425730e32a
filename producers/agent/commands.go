package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// commandLoop consumes agent.commands.v1: every command for one of the
// agent's hosts is executed on the pool, and each record is marked for the
// client's next commit once it and every record before it in its
// partition are answered (marks). The loop polls on while commands run.
// Polling uses ctx; execution and answers use hard, which outlives ctx by
// the shutdown grace.
func (a *Agent) commandLoop(ctx, hard context.Context, p *pool) {
	m := newMarks(a.cl.MarkCommitRecords)
	failures := 0
	for {
		fs := a.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		var fetchErr error
		fs.EachError(func(t string, part int32, err error) {
			if fetchErr == nil {
				fetchErr = fmt.Errorf("fetch %s/%d: %w", t, part, err)
			}
		})
		n := 0
		fs.EachRecord(func(kr *kgo.Record) {
			n++
			a.dispatch(ctx, hard, p, kr, m.add(kr))
		})
		a.cl.AllowRebalance()
		if fetchErr != nil && n == 0 {
			a.log.Warn("polling agent commands", "err", fetchErr)
			if !sleep(ctx, backoff(failures)) {
				return
			}
			failures++
			continue
		}
		failures = 0
	}
}

// dispatch decodes one record and hands a command for one of our hosts to
// the pool, which calls finish once it is answered. An undecodable record
// is logged, counted and skipped; commands for other hosts are skipped;
// a skipped record is finished at once.
//
// An agent writes no dead letters: dlq.v1 is for processors and projectors
// (internal/kafka's ACLs), since a redrive trusts what a dead letter says
// of its origin. Nothing is lost by skipping: the processors wrote the
// record, and the VM processor sends an unanswered command again or ends
// its job at the job timeout.
func (a *Agent) dispatch(ctx, hard context.Context, p *pool, kr *kgo.Record, finish func()) {
	// Decoded under its logical topic; the record itself keeps the
	// physical one, which MarkCommitRecords commits by.
	logical := *kr
	logical.Topic = a.cfg.Kafka.Logical(kr.Topic)
	rec, err := kafka.FromKafka(hard, a.codec, &logical)
	var cmd *schemas.AgentCommand
	if err == nil {
		var ok bool
		if cmd, ok = commandOf(rec.Value); !ok {
			err = fmt.Errorf("%s is not an agent command", schemas.TypeName(rec.Value))
		}
	}
	if err != nil {
		a.log.Error("skipping an undecodable agent command", "partition", kr.Partition, "offset", kr.Offset, "err", err)
		telemetry.AgentCommands.With("undecodable", "skipped").Inc() // telemetry:
		finish()
		return
	}
	if a.investigate(ctx, p, rec, finish) {
		return // checkhost.go: addressed by cluster, not by host
	}
	h, ok := a.hosts[cmd.HostID]
	if !ok {
		finish()
		return
	}
	if r, ok := rec.Value.(*schemas.AgentRejected); ok {
		if !h.rejected.Swap(true) {
			a.log.Error("host rejected by the control plane; no more reports for it", "host", cmd.HostID, "reason", r.Reason)
		}
		finish()
		return
	}
	if ab, ok := rec.Value.(*schemas.AbortMigrateVm); ok {
		a.abortMigration(hard, h, rec, cmd, ab, finish) // abort.go: not behind the migration
		return
	}
	key := cmd.VmID
	if key == "" {
		key = cmd.CommandID
	}
	p.submit(ctx, job{key: key, run: func(ctx context.Context, done func()) { a.execute(ctx, h, rec, cmd, done) }, done: finish})
}

// execute carries out one command and answers it, unless the command id was
// answered before: then the first answer is sent again and nothing runs.
// An answer is kept (in the answers file, with a data directory) before it
// is sent. It calls done once the answer is written (or not to be sent):
// the worker waits for neither the disk nor the broker, so the answers of a
// batch's commands share one fsync and go out together instead of one
// round trip after another.
func (a *Agent) execute(ctx context.Context, h *hostState, rec schemas.Record, cmd *schemas.AgentCommand, done func()) {
	if prev, ok := h.answers.get(cmd.CommandID); ok {
		a.answerAgain(ctx, prev, cmd, done)
		return
	}
	answered, cutOff := false, false
	defer func() {
		if !answered && !cutOff {
			done() // dropped: nothing to wait for
		}
	}()
	var err error
	ctx, span := a.commandSpan(ctx, &rec, cmd)       // telemetry:
	defer func() { a.commandDone(span, rec, err) }() // telemetry:
	where, report, ended, err := a.carryOutAbortable(ctx, h, rec, cmd)
	defer ended() // after the answer is kept: an abort then finds it answered
	if Unanswered(err) {
		// The agent of a crashed or partitioned host cannot answer, and a
		// command issued before its host came back is void there; the
		// job that sent it resends it or times out, as with a real outage.
		a.log.WarnContext(ctx, "command dropped unanswered", "host", cmd.HostID, "command", cmd.CommandID, "err", err)
		return
	}
	if ctx.Err() != nil {
		// The shutdown grace ran out: not answered, so never finished,
		// and neither it nor a later command of its partition is marked.
		// The agent's next run gets it again and answers it (the driver's
		// commands are idempotent).
		cutOff = true
		return
	}
	answer, out := a.answer(h, where, rec, cmd, err, report)
	a.log.DebugContext(ctx, "command executed", "host", cmd.HostID, "vm", cmd.VmID, "type", answer.CommandType, "ok", answer.OK, "err", answer.Error)
	answered = true
	a.keepAndSend(ctx, answer, out, done)
}

// answerAgain sends the first answer to a command id again. That answer
// may still be on its way to the disk: it is sent again only once it is
// there.
func (a *Agent) answerAgain(ctx context.Context, prev schemas.Record, cmd *schemas.AgentCommand, done func()) {
	a.answers.sync(func() {
		a.produceThen(ctx, []schemas.Record{prev}, func(err error) {
			if err != nil {
				a.log.Warn("repeated answer not sent", "command", cmd.CommandID, "err", err)
			}
			done()
		})
	})
}

// carryOutAbortable is carryOut, with a MigrateVm run so that an
// AbortMigrateVm can stop it (abort.go): stopped, or aborted before it
// began, it fails with errAborted and the VM stays at its source. ended is
// to be called once the answer is kept.
func (a *Agent) carryOutAbortable(ctx context.Context, h *hostState, rec schemas.Record, cmd *schemas.AgentCommand) (where *hostState, report bool, ended func(), err error) {
	m, ok := rec.Value.(*schemas.MigrateVm)
	if !ok {
		where, report, err = a.carryOut(ctx, h, rec)
		return where, report, func() {}, err
	}
	run, end, aborted := a.aborts.start(ctx, cmd.CommandID)
	if aborted {
		// Answered as a failed migration is, the power read at the
		// destination (abortMigration never keeps back one the ledger
		// says was carried out).
		if d, ok := a.hosts[m.DestHostID]; ok {
			h = d
		}
		return h, false, func() {}, errAborted
	}
	where, report, err = a.carryOut(run, h, rec)
	a.aborts.over(cmd.CommandID)
	if err != nil && run.Err() != nil && ctx.Err() == nil {
		a.log.InfoContext(ctx, "live migration stopped", "host", cmd.HostID, "vm", cmd.VmID, "err", err)
		err = errAborted // the driver's error is only its context's end
	}
	return where, report, end, err
}

// carryOut runs the command on the driver (Execute). where is the host the
// VM is on afterwards.
func (a *Agent) carryOut(ctx context.Context, h *hostState, rec schemas.Record) (where *hostState, report bool, err error) {
	host, report, err := Execute(ctx, a.drv, rec.Value, a.cfg.Clock().UnixMilli(), a.order)
	if w, ok := a.hosts[host]; ok {
		return w, report, err
	}
	return h, report, err
}

// answer builds the answer to a command that came to err, keeps it in h's
// cache for a repeat, and returns it with what goes out: the answer first,
// then, after success, the VM's PowerReport when report is set and the VM
// lists of the hosts a VM came to or left.
func (a *Agent) answer(h, where *hostState, rec schemas.Record, cmd *schemas.AgentCommand, err error, report bool) (*schemas.AgentAnswer, []schemas.Record) {
	seq := where.nextSeq()
	state, serr := a.drv.PowerState(where.info.ID, cmd.VmID)
	switch {
	case errors.Is(serr, ErrUnknownVM):
		state = schemas.PowerOff // destroyed, or moved away
	case serr != nil:
		state = schemas.PowerUnknown
	}
	at := a.cfg.Clock().UnixMilli()
	answer := &schemas.AgentAnswer{CommandID: cmd.CommandID, VmID: cmd.VmID, HostID: cmd.HostID, Epoch: cmd.Epoch,
		CommandType: schemas.TypeName(rec.Value), OK: err == nil, PowerState: state, AnsweredAt: at,
		PowerHost: where.info.ID, ReportSeq: seq}
	if err != nil {
		answer.Error = schemas.CleanText(err.Error()) // a driver's error may hold its tool's raw output
	}
	ar := schemas.Record{Topic: schemas.TopicVmAnswers, Key: cmd.VmID, Value: answer, Headers: answerHeaders(rec, cmd)}
	h.answers.put(cmd.CommandID, ar)
	out := []schemas.Record{ar}
	if err != nil {
		return answer, out
	}
	if report && !where.rejected.Load() && where.connected.Load() {
		out = append(out, schemas.Record{Topic: schemas.TopicVmPower, Key: cmd.VmID, Value: &schemas.PowerReport{
			VmID: cmd.VmID, HostID: where.info.ID, PowerState: state, ReportSeq: seq, ReportedAt: at},
			Headers: traceHeaders(rec)}) // telemetry:
	}
	return answer, append(out, a.vmListsAfter(rec, h, where, seq, at)...)
}

// vmListsAfter returns, after a command that brought a VM to a host or
// took it away, the VM lists (AgentPings) of the hosts concerned, so that
// a host that fails before its next round still names the VM in its
// HostDown signals.
func (a *Agent) vmListsAfter(rec schemas.Record, h, where *hostState, seq, at int64) []schemas.Record {
	switch rec.Value.(type) {
	case *schemas.StartVm, *schemas.DestroyVm, *schemas.MigrateVm:
	default:
		return nil
	}
	var out []schemas.Record
	if r, ok := a.vmList(where, seq, at); ok {
		out = append(out, r)
	}
	if where != h {
		if r, ok := a.vmList(h, h.nextSeq(), at); ok {
			out = append(out, r)
		}
	}
	return out
}

// keepAndSend keeps the answer (in the answers file, with a data
// directory), then sends out, and calls done once that is written.
func (a *Agent) keepAndSend(ctx context.Context, answer *schemas.AgentAnswer, out []schemas.Record, done func()) {
	a.answers.keep(keptAnswer{Answer: *answer, Traceparent: out[0].Headers["traceparent"]}, func(err error) {
		if err != nil {
			// The answer still goes out, or the job would wait for its
			// timeout; only a redelivery after a restart would run the
			// command again, and the driver's idempotence covers that.
			a.log.Error("answer not kept in the answers file", "command", answer.CommandID, "err", err)
		}
		a.produceThen(ctx, out, func(err error) {
			if err != nil {
				a.log.Warn("answer not sent", "command", answer.CommandID, "err", err)
			}
			done()
		})
	})
}

// vmList is an AgentPing with the host's VMs, or nothing for a host that is
// not announced, rejected or unreachable.
func (a *Agent) vmList(h *hostState, seq, at int64) (schemas.Record, bool) {
	if h.rejected.Load() || !h.connected.Load() {
		return schemas.Record{}, false
	}
	states, err := a.drv.PowerStates(h.info.ID)
	if err != nil {
		return schemas.Record{}, false
	}
	return schemas.Record{Topic: schemas.TopicHostEvents, Key: h.info.ID, Value: &schemas.AgentPing{
		HostID: h.info.ID, ReportSeq: seq, VmIDs: SortedIDs(states), At: at}}, true
}

// answerHeaders carries the command id and the trace of the command.
func answerHeaders(rec schemas.Record, cmd *schemas.AgentCommand) map[string]string {
	h := map[string]string{"command_id": cmd.CommandID}
	if tp := rec.Headers["traceparent"]; tp != "" {
		h["traceparent"] = tp
	}
	return h
}

// commandOf returns the fields every agent command shares.
func commandOf(v any) (*schemas.AgentCommand, bool) {
	c, ok := v.(schemas.AgentCommandRecord)
	if !ok {
		return nil, false
	}
	return c.Command(), true
}
