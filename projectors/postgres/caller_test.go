package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// TestJobCallerAndErrorCode: a job's row names who asked, from its command
// or its acceptance, and keeps it through events that name nobody (a
// JobAccepted from before the field, the job's steps and end); its end
// sets error_code beside reason and detail, Unknown for a reason outside
// the set. The live writes, the fold (Model) and a rebuild agree.
func TestJobCallerAndErrorCode(t *testing.T) {
	_, conn := migratedDB(t)
	ctx := t.Context()
	alice := schemas.Caller{Account: "acme", KeyID: "k1", RequestID: "req-1"}
	admin := schemas.Caller{Account: "admin", KeyID: "k9", RequestID: "req-2"}
	ref := func(id string) schemas.JobRef {
		return schemas.JobRef{JobID: id, VmID: "vm1", Account: "acme", JobType: "Stop", Origin: "api", At: 1000}
	}
	cmd := func(id string, c schemas.Caller) any {
		return &schemas.Stop{VmCommand: schemas.VmCommand{CommandID: id, VmID: "vm1", Account: "acme", Origin: "api", IssuedAt: 900, Caller: c}}
	}
	var offset int64
	rec := func(topic string, v any) schemas.Record {
		offset++
		return schemas.Record{Topic: topic, Key: "vm1", Offset: offset, TimestampMs: 1000, Value: v}
	}
	polls := [][]schemas.Record{
		// j1: the command names alice; its acceptance, from an older
		// writer, nobody.
		{rec(schemas.TopicVmCommands, cmd("j1", alice))},
		{rec(schemas.TopicVmEvents, &schemas.JobAccepted{JobRef: ref("j1")}),
			rec(schemas.TopicVmEvents, &schemas.JobFailed{JobRef: ref("j1"), Reason: schemas.CodeTimeout, Detail: "no answer"})},
		// j2: the acceptance comes first and names the admin; the command
		// follows.
		{rec(schemas.TopicVmEvents, &schemas.JobAccepted{JobRef: ref("j2"), Caller: admin}),
			rec(schemas.TopicVmEvents, &schemas.JobCancelled{JobRef: ref("j2"), Reason: "Cancelled by terminate job j9"})},
		{rec(schemas.TopicVmCommands, cmd("j2", admin))},
		// j3: rejected with a reason outside the set; j4 an HA restart's
		// acceptance names system, and it succeeds.
		{rec(schemas.TopicVmEvents, &schemas.JobRejected{JobRef: ref("j3"), Reason: "Bogus", Detail: "d", Caller: alice}),
			rec(schemas.TopicVmEvents, &schemas.JobAccepted{JobRef: ref("j4"), Caller: schemas.SystemCaller()}),
			rec(schemas.TopicVmEvents, &schemas.JobSucceeded{JobRef: ref("j4")})},
		// j5: a command only, still pending.
		{rec(schemas.TopicVmCommands, cmd("j5", alice))},
	}
	m := NewModel()
	var log []schemas.Record
	for _, poll := range polls {
		m.Apply(poll)
		log = append(log, poll...)
		ch := newChanges()
		for _, r := range poll {
			ch.add(r)
		}
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		ch.queue(b)
		b.Queue("COMMIT")
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadModel(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Diff(m); d != "" {
		t.Fatalf("the tables differ from the fold: %s", d)
	}
	if d := Rebuilt(log).Diff(m); d != "" {
		t.Fatalf("a rebuild differs from the live fold: %s", d)
	}
	for _, want := range []struct {
		id, state, code string
		caller          schemas.Caller
	}{
		{"j1", "failed", schemas.CodeTimeout, alice},
		{"j2", "cancelled", schemas.CodeCancelled, admin},
		{"j3", "rejected", schemas.CodeUnknown, alice},
		{"j4", "succeeded", "", schemas.SystemCaller()},
		{"j5", "pending", "", alice},
	} {
		j := got.jobs[want.id]
		if j.State != want.state || j.ErrorCode != want.code || j.Caller != want.caller {
			t.Errorf("%s: state %q error_code %q caller %+v; want %q %q %+v", want.id, j.State, j.ErrorCode, j.Caller,
				want.state, want.code, want.caller)
		}
	}
}
