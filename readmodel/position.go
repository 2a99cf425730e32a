package readmodel

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// ProjectorGroup is the consumer group under which the Postgres projector
// stores its positions in consumer_offsets: like the tables' names it is
// the database's, and TestProjectorGroup holds it to the projector's
// DefaultGroup.
const ProjectorGroup = "vmplane-projector-postgres"

// JobSnapshot is a job with its steps and the projector's position in
// vm.events.v1, read in one snapshot of the database: the rows hold every
// event before the position and none at or after it, since the projector
// commits each batch's rows with its offsets. A stream joins it to the
// events it follows by that position (gateway/join.go).
type JobSnapshot struct {
	// Job is nil when the read model has no row for the job (yet): none
	// of its events, nor its command, is before the position.
	Job   *Job
	Steps []JobStep
	// Next is the next offset the projector applies in each partition of
	// vm.events.v1; a partition it has never applied is absent (0).
	Next map[int32]int64
}

// JobSnapshot reads a job, its steps and the projector's position in
// vm.events.v1 in one repeatable-read transaction.
func (r *Reader) JobSnapshot(ctx context.Context, id string) (JobSnapshot, error) {
	var snap JobSnapshot
	err := pgx.BeginTxFunc(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumnsSQL+` FROM jobs WHERE id = $1`, id))
		switch {
		case err == nil:
			snap.Job = &j
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("job %s: %w", id, err)
		}
		rows, err := tx.Query(ctx, `SELECT job_id, seq, task_state, step, text, obj, at FROM job_steps
			WHERE job_id = $1 ORDER BY seq`, id)
		if err != nil {
			return fmt.Errorf("job steps of %s: %w", id, err)
		}
		if snap.Steps, err = collect(rows, scanStep, "job steps of "+id); err != nil {
			return err
		}
		snap.Next, err = eventsPosition(ctx, tx)
		return err
	})
	if err != nil {
		return JobSnapshot{}, fmt.Errorf("snapshot of job %s: %w", id, err)
	}
	return snap, nil
}

// EventsPosition returns the next offset the projector applies in each
// partition of vm.events.v1 (a partition it has never applied is absent).
func (r *Reader) EventsPosition(ctx context.Context) (map[int32]int64, error) {
	return eventsPosition(ctx, r.pool)
}

func eventsPosition(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (map[int32]int64, error) {
	rows, err := q.Query(ctx, `SELECT "partition", next_offset FROM consumer_offsets WHERE "group" = $1 AND topic = $2`,
		ProjectorGroup, schemas.TopicVmEvents)
	if err != nil {
		return nil, fmt.Errorf("projector position: %w", err)
	}
	next := map[int32]int64{}
	var p int32
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&p, &n}, func() error {
		next[p] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projector position: %w", err)
	}
	return next, nil
}
