package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The journal is a projection: when its database or tables vanish (a
// ClickHouse server replaced or wiped, a database dropped by hand), the
// projector recreates them and reads the log again from its start, which the
// ReplacingMergeTree tables absorb where rows survived.

// errProjectionGone says an insert found its database or table missing; the
// run ends and the next one rebuilds.
var errProjectionGone = errors.New("the journal's database or tables are gone")

// ClickHouse exception codes of a missing table and a missing database.
const (
	codeUnknownTable    = 60
	codeUnknownDatabase = 81
)

func isGone(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && (ex.Code == codeUnknownTable || ex.Code == codeUnknownDatabase)
}

// goneOr marks an insert error that found the projection gone.
func goneOr(err error) error {
	if isGone(err) {
		return fmt.Errorf("%w: %v", errProjectionGone, err)
	}
	return err
}

// journalExists reports whether the job_journal table is there already.
func journalExists(ctx context.Context, conn driver.Conn, database string) (bool, error) {
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = 'job_journal'", database).Scan(&n); err != nil {
		return false, fmt.Errorf("look up the journal tables: %w", err)
	}
	return n > 0, nil
}

// fromStartOnce moves the partitions of the first assignment to the start
// of the log; later assignments keep what the group committed since.
func fromStartOnce() func(context.Context, map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var once sync.Once
	return func(_ context.Context, o map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
		once.Do(func() {
			for _, parts := range o {
				for p := range parts {
					parts[p] = kgo.NewOffset().AtStart()
				}
			}
		})
		return o, nil
	}
}
