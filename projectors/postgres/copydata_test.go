package postgres

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// TestCopyDataAsPgx loads the same job and step rows into jobs and
// job_steps twice, through pgx's CopyFrom of their values and through the
// binary stream the rebuild writes itself, and reads both back: every
// column holds the same, for the edge values of each type.
func TestCopyDataAsPgx(t *testing.T) {
	_, conn := migratedDB(t)
	ctx := t.Context()
	finished := time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("x", 3600))
	jobs := []jobRow{
		{ID: "j1", VmID: "vm-1", Account: "acme", Type: "Deploy", Origin: "api", State: "running", AllowedActions: []string{},
			CreatedAt: time.UnixMilli(1_700_000_000_123).UTC(), UpdatedAt: time.UnixMilli(1_700_000_000_124), Version: 7},
		{ID: "j2", VmID: "vm-é", Account: "ünï\tcode\\", Type: "Stop", State: "failed", Reason: "Timeout", Detail: "line\nbreak",
			TaskState: "Stopping", AllowedActions: []string{"start", "", "terminate ☃"}, CreatedAt: time.Time{},
			UpdatedAt: time.Unix(-5, 1500), FinishedAt: &finished, Version: -1, ErrorCode: "E1",
			Caller: schemas.Caller{Account: "acct", KeyID: "key", RequestID: "req"}},
	}
	steps := []stepRow{
		{JobID: "j1", VmID: "vm-1", TaskState: "Scheduling", Step: "schedule", Text: "placing", Obj: `{"host_id":"h1"}`,
			Seq: 1, At: time.UnixMilli(1_700_000_000_200), version: 9},
		{JobID: "j1", Seq: -2147483648, At: time.Date(2100, 1, 1, 0, 0, 0, 1000, time.UTC), version: 1 << 62},
	}

	var viaPgx, viaCopyData map[string][]string
	for i, own := range []bool{false, true} {
		if own {
			if err := copyOwn(ctx, conn, jobs, steps); err != nil {
				t.Fatal(err)
			}
		} else {
			jobValues := make([][]any, len(jobs))
			for i := range jobs {
				jobValues[i] = jobs[i].values()
			}
			stepValues := make([][]any, len(steps))
			for i, st := range steps {
				stepValues[i] = []any{st.JobID, st.Seq, st.VmID, st.TaskState, st.Step, st.Text, st.Obj, st.At, st.version}
			}
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{"jobs"}, jobsCopyColumns, pgx.CopyFromRows(jobValues)); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{"job_steps"}, stepsCopyColumns, pgx.CopyFromRows(stepValues)); err != nil {
				t.Fatal(err)
			}
		}
		got := map[string][]string{}
		for _, table := range []string{"jobs", "job_steps"} {
			rows, err := conn.Query(ctx, "SELECT t::text FROM "+table+" t ORDER BY 1")
			if err != nil {
				t.Fatal(err)
			}
			if got[table], err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				t.Fatal(err)
			}
			if len(got[table]) == 0 {
				t.Fatalf("run %d: %s is empty", i, table)
			}
		}
		if _, err := conn.Exec(ctx, "TRUNCATE jobs, job_steps"); err != nil {
			t.Fatal(err)
		}
		if own {
			viaCopyData = got
		} else {
			viaPgx = got
		}
	}
	if !reflect.DeepEqual(viaPgx, viaCopyData) {
		t.Fatalf("rows differ\npgx      %q\ncopyData %q", viaPgx, viaCopyData)
	}
}

// copyOwn copies the rows through two streams, in chunks of a few rows.
func copyOwn(ctx context.Context, conn *pgx.Conn, jobs []jobRow, steps []stepRow) error {
	for _, table := range []struct {
		name string
		cols []string
		data []copyData
	}{
		{"jobs", jobsCopyColumns, []copyData{appendJobRow(nil, &jobs[0]), appendJobRow(nil, &jobs[1])}},
		{"job_steps", stepsCopyColumns, []copyData{appendStepRow(appendStepRow(nil, &steps[0]), &steps[1])}},
	} {
		chunks := make(chan copyData, len(table.data))
		for _, d := range table.data {
			chunks <- d
		}
		close(chunks)
		if _, err := conn.PgConn().CopyFrom(ctx, newCopyReader(ctx, chunks, make(chan copyData, 1)), copySQL(table.name, table.cols)); err != nil {
			return err
		}
	}
	return nil
}
