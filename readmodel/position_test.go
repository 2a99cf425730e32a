package readmodel

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/projectors/postgres"
)

func TestProjectorGroup(t *testing.T) {
	if ProjectorGroup != postgres.DefaultGroup {
		t.Fatalf("ProjectorGroup %q, the projector's group %q", ProjectorGroup, postgres.DefaultGroup)
	}
}

// TestJobSnapshot: the job, its steps and the projector's position of
// vm.events.v1 (not of another topic or group) are read in one snapshot:
// while a writer commits a step with the next offset, transaction after
// transaction as the projector does, every snapshot holds exactly the
// steps before its position.
func TestJobSnapshot(t *testing.T) {
	dsn := migratedDB(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `
		INSERT INTO jobs (id, vm_id, account, type, state, created_at, updated_at, version)
		VALUES ('job-1', 'vm-1', 'acme', 'Deploy', 'running', now(), now(), 0);
		INSERT INTO consumer_offsets ("group", topic, "partition", next_offset) VALUES
			('`+ProjectorGroup+`', 'vm.events.v1', 0, 100), ('`+ProjectorGroup+`', 'vm.events.v1', 1, 7),
			('`+ProjectorGroup+`', 'vm.commands.v1', 0, 555), ('another', 'vm.events.v1', 0, 999)`); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	snap, err := r.JobSnapshot(ctx, "job-none")
	if err != nil || snap.Job != nil || len(snap.Steps) != 0 || fmt.Sprint(snap.Next) != "map[0:100 1:7]" {
		t.Fatalf("unknown job: %+v, %v", snap, err)
	}
	if next, err := r.EventsPosition(ctx); err != nil || fmt.Sprint(next) != "map[0:100 1:7]" {
		t.Fatalf("position %v, %v", next, err)
	}

	const steps = 200
	done := make(chan error, 1)
	go func() {
		for seq := 1; seq <= steps; seq++ {
			_, err := conn.Exec(ctx, `
				BEGIN;
				INSERT INTO job_steps (job_id, seq, step, at, version) VALUES ('job-1', `+fmt.Sprint(seq)+`, 's', now(), `+fmt.Sprint(99+seq)+`);
				UPDATE consumer_offsets SET next_offset = `+fmt.Sprint(100+seq)+`
					WHERE "group" = '`+ProjectorGroup+`' AND topic = 'vm.events.v1' AND "partition" = 0;
				COMMIT`)
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for reads := 0; ; reads++ {
		snap, err := r.JobSnapshot(ctx, "job-1")
		if err != nil {
			t.Fatal(err)
		}
		if snap.Job == nil || snap.Job.ID != "job-1" {
			t.Fatalf("job %+v", snap.Job)
		}
		if got, want := len(snap.Steps), int(snap.Next[0]-100); got != want {
			t.Fatalf("a snapshot at offset %d holds %d steps, want %d", snap.Next[0], got, want)
		}
		if snap.Next[0] == 100+steps {
			t.Logf("%d snapshots while %d steps committed", reads+1, steps)
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
