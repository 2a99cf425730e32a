package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/vmplane/vmplane/internal/chserver"
)

// Table is the result of an analyst's query, every value as text.
type Table struct {
	Columns []string
	Rows    [][]string
	// Truncated says more rows were there than the query's limit.
	Truncated bool
}

// QueryLimits bound one analyst query in the process that asks it, whatever
// the server's profile of the analyst user says (chserver.AnalystLimits):
// a server without that profile still cannot keep the gateway waiting or
// fill its memory.
type QueryLimits struct {
	// Timeout ends the query: the driver asks the server to cancel it and
	// it is killed (KILL QUERY) in case the server does not listen.
	Timeout time.Duration
	// MaxBytes is the most text an answer may hold; a larger answer is
	// refused, not cut, since a cut one would look complete.
	MaxBytes int
}

// DefaultQueryLimits returns 35 s, past the analyst profile's 30 s so that
// the server's own timeout, with its figures, is what an analyst usually
// sees, and 16 MiB of text, about 1,600 bytes for each of the 10,000 rows
// the gateway returns.
func DefaultQueryLimits() QueryLimits {
	return QueryLimits{Timeout: 35 * time.Second, MaxBytes: 16 << 20}
}

// QueryError is why an analyst's query was refused, in words for the
// analyst: ClickHouse's message with addresses removed, or the limit the
// answer hit. Other errors of Query (the server unreachable) are the
// operator's.
type QueryError struct {
	Message string
	// Timeout: the query ran out of time (max_execution_time, or
	// QueryLimits.Timeout, after which it was killed).
	Timeout bool
	// Limit: a limit of the analyst's profile or of QueryLimits refused it.
	Limit bool
}

func (e *QueryError) Error() string { return e.Message }

// ErrNoAnalyst says the server does not know the analyst user of the
// database (or refuses it): an operator's setup, not the analyst's query.
var ErrNoAnalyst = errors.New("the ClickHouse analyst user of this database is missing or refused")

// History is what the gateway reads from ClickHouse: job journals, VM
// histories and time travel through the projector's connection, and
// analysts' queries through a separate one as the database's analyst user
// (chserver.AnalystUser): read-only, bounded by its profile, allowed the
// journal's database only, so that vmplane never has to parse SQL to keep
// an analyst from changing or leaving the journal.
type History struct {
	*Reader
	conn, analyst driver.Conn
	limits        QueryLimits
}

// HistoryOption adjusts OpenHistory.
type HistoryOption func(*History)

// WithQueryLimits sets the limits of analysts' queries (default
// DefaultQueryLimits).
func WithQueryLimits(l QueryLimits) HistoryOption { return func(h *History) { h.limits = l } }

// OpenHistory connects to ClickHouse at addr twice: as a's user (the
// journal's writer) for the
// journal's fixed queries (and to kill an analyst's query that outlives its
// limit), and as the database's analyst user, with a's analyst password,
// for Query.
func OpenHistory(addr, database string, a chserver.Access, opts ...HistoryOption) (*History, error) {
	conn, err := Open(addr, a)
	if err != nil {
		return nil, err
	}
	user := chserver.AnalystUser(database)
	o, err := a.Analyst(database).Options(addr, database)
	if err != nil {
		conn.Close()
		return nil, err
	}
	o.ReadTimeout = 60 * time.Second
	analyst, err := clickhouse.Open(o)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open clickhouse %s as %s: %w", addr, user, err)
	}
	h := &History{Reader: NewReader(conn, database), conn: conn, analyst: analyst, limits: DefaultQueryLimits()}
	for _, o := range opts {
		o(h)
	}
	return h, nil
}

// Close closes both connections.
func (h *History) Close() error {
	return errors.Join(h.conn.Close(), h.analyst.Close())
}

// Query runs an analyst's SQL as the analyst user in the journal's database
// and returns at most maxRows rows (maxRows <= 0 means 10000). A refusal the
// analyst can act on is a *QueryError.
func (h *History) Query(ctx context.Context, query string, maxRows int) (Table, error) {
	if maxRows <= 0 {
		maxRows = 10000
	}
	id := newQueryID()
	deadline := time.Now().Add(h.limits.Timeout)
	qctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	t, err := h.read(clickhouse.Context(qctx, clickhouse.WithQueryID(id)), cancel, query, maxRows)
	var (
		qe *QueryError
		ex *clickhouse.Exception
	)
	switch {
	case err == nil || errors.As(err, &qe):
		return t, err
	case errors.As(err, &ex):
		return Table{}, analystError(err)
	case ctx.Err() != nil || !time.Now().Before(deadline):
		// The driver gave up at the deadline (the context's, or its
		// socket's, which it sets to the same instant) and hung up; the
		// server may not notice a query it is busy with, so it is killed.
		h.kill(id)
		if ctx.Err() != nil {
			return Table{}, ctx.Err()
		}
		return Table{}, &QueryError{Timeout: true, Message: fmt.Sprintf("the query ran longer than %v and was stopped", h.limits.Timeout)}
	}
	return Table{}, analystError(err)
}

// read runs the query and reads at most maxRows rows and limits.MaxBytes
// of text. stop ends the query on the server: after the rows wanted it is
// called before the rows are closed, since closing them reads the rest of
// the answer otherwise.
func (h *History) read(ctx context.Context, stop context.CancelFunc, query string, maxRows int) (Table, error) {
	rows, err := h.analyst.Query(ctx, query)
	if err != nil {
		return Table{}, err
	}
	defer func() { stop(); rows.Close() }()
	types := rows.ColumnTypes()
	t := Table{Columns: rows.Columns(), Rows: [][]string{}}
	dest := make([]any, len(types))
	for i, ct := range types {
		dest[i] = reflect.New(ct.ScanType()).Interface()
	}
	size := 0
	for rows.Next() {
		if len(t.Rows) == maxRows {
			t.Truncated = true
			return t, nil
		}
		if err := rows.Scan(dest...); err != nil {
			return Table{}, fmt.Errorf("read row %d: %w", len(t.Rows)+1, err)
		}
		row := make([]string, len(dest))
		for i, d := range dest {
			row[i] = text(reflect.ValueOf(d).Elem().Interface())
			size += len(row[i])
		}
		if size > h.limits.MaxBytes {
			return Table{}, &QueryError{Limit: true, Message: fmt.Sprintf(
				"the answer holds more than %s of text; select fewer rows or columns, or aggregate", mib(h.limits.MaxBytes))}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, rows.Err()
}

// kill ends the query id on the server, as the journal's user: the analyst
// user is readonly, and its connection is the one that gave up.
func (h *History) kill(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.conn.Exec(ctx, "KILL QUERY WHERE query_id = ? ASYNC", id)
}

func newQueryID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "analyst-" + hex.EncodeToString(b)
}

func mib(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ClickHouse's codes for what an analyst's query may run into.
const (
	chTooManyRows          = 158 // max_rows_to_read
	chTimeoutExceeded      = 159 // max_execution_time
	chTooSlow              = 160
	chUnknownUser          = 192
	chWrongPassword        = 193
	chMemoryLimitExceeded  = 241
	chTooManyBytes         = 307 // max_bytes_to_read
	chTooManyRowsOrBytes   = 396 // max_result_rows, max_result_bytes
	chAuthenticationFailed = 516
)

// analystError sorts an error of the analyst's query: ClickHouse's refusal
// is a QueryError whose message holds no address; a missing analyst user
// is ErrNoAnalyst; anything else (the connection) stays the operator's.
func analystError(err error) error {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		return fmt.Errorf("analyst query: %w", err)
	}
	msg := scrubAddresses(ex.Message)
	switch ex.Code {
	case chUnknownUser, chWrongPassword, chAuthenticationFailed:
		return fmt.Errorf("%w: %s", ErrNoAnalyst, msg)
	case chTimeoutExceeded:
		return &QueryError{Timeout: true, Message: msg}
	case chTooManyRows, chTooSlow, chMemoryLimitExceeded, chTooManyBytes, chTooManyRowsOrBytes:
		return &QueryError{Limit: true, Message: msg}
	}
	return &QueryError{Message: msg}
}

// addresses are what a server message may say of sockets and hosts: an
// IPv4 or bracketed IPv6 address with or without a port, a host name with
// a port. Times (12:30:45) start with a digit and are left alone.
var addresses = regexp.MustCompile(`\[[0-9A-Fa-f:.]+\](:\d+)?|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b|\b[A-Za-z][A-Za-z0-9.-]*:\d{1,5}\b`)

// scrubAddresses replaces addresses in a server's message: the analyst
// needs what was wrong with the query, not where the servers are.
func scrubAddresses(s string) string { return addresses.ReplaceAllString(s, "<address>") }

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
