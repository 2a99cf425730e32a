package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// AnalystUser is the ClickHouse user analysts' queries run as. Its profile
// is readonly=1 (internal/chserver writes it so; a production server needs
// the same): the server itself refuses any write, DDL or settings change,
// whatever the text of the query, so vmplane never has to parse SQL to keep
// an analyst from changing the journal.
const AnalystUser = "analyst"

// Table is the result of an analyst's query, every value as text.
type Table struct {
	Columns []string
	Rows    [][]string
	// Truncated says more rows were there than the query's limit.
	Truncated bool
}

// History is what the gateway reads from ClickHouse: job journals, VM
// histories and time travel through the projector's connection, and
// analysts' queries through a separate one as AnalystUser.
type History struct {
	*Reader
	conn, analyst driver.Conn
}

// OpenHistory connects to ClickHouse at addr twice: as the default user for
// the journal's fixed queries, and as AnalystUser for Query.
func OpenHistory(addr, database string) (*History, error) {
	conn, err := Open(addr)
	if err != nil {
		return nil, err
	}
	analyst, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{addr},
		Protocol:    clickhouse.Native,
		Auth:        clickhouse.Auth{Database: database, Username: AnalystUser},
		DialTimeout: 5 * time.Second,
		ReadTimeout: 60 * time.Second,
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open clickhouse %s as %s: %w", addr, AnalystUser, err)
	}
	return &History{Reader: NewReader(conn, database), conn: conn, analyst: analyst}, nil
}

// Close closes both connections.
func (h *History) Close() error {
	return errors.Join(h.conn.Close(), h.analyst.Close())
}

// Query runs an analyst's SQL as AnalystUser in the journal's database and
// returns at most maxRows rows (maxRows <= 0 means 10000).
func (h *History) Query(ctx context.Context, query string, maxRows int) (Table, error) {
	if maxRows <= 0 {
		maxRows = 10000
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the server sending the rows past maxRows
	rows, err := h.analyst.Query(ctx, query)
	if err != nil {
		return Table{}, fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	t := Table{Columns: rows.Columns(), Rows: [][]string{}}
	dest := make([]any, len(types))
	for i, ct := range types {
		dest[i] = reflect.New(ct.ScanType()).Interface()
	}
	for rows.Next() {
		if len(t.Rows) == maxRows {
			t.Truncated = true
			break
		}
		if err := rows.Scan(dest...); err != nil {
			return Table{}, fmt.Errorf("query: read row %d: %w", len(t.Rows)+1, err)
		}
		row := make([]string, len(dest))
		for i, d := range dest {
			row[i] = text(reflect.ValueOf(d).Elem().Interface())
		}
		t.Rows = append(t.Rows, row)
	}
	if !t.Truncated {
		if err := rows.Err(); err != nil {
			return Table{}, fmt.Errorf("query: %w", err)
		}
	}
	return t, nil
}

// text renders one value the way clickhouse-client would.
func text(v any) string {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05")
	case *time.Time:
		if x == nil {
			return "NULL"
		}
		return x.UTC().Format("2006-01-02 15:04:05")
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return "NULL"
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "NULL"
		}
		return text(rv.Elem().Interface())
	}
	return fmt.Sprint(v)
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
