package journal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os/exec"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/testkit"
	pj "github.com/vmplane/vmplane/projectors/journal"
)

// server is the ClickHouse test server: a connection and the
// clickhouse-client command line of the same address.
type server struct {
	addr, host, port string
	access           chserver.Access
	client           string
	conn             driver.Conn
}

func openServer() (*server, error) {
	client, err := exec.LookPath("clickhouse-client")
	if err != nil {
		return nil, fmt.Errorf("the limit needs clickhouse-client: %w", err)
	}
	addr := testkit.ClickHouseAddr()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	access, err := testkit.ClickHouseAccess()
	if err != nil {
		return nil, err
	}
	conn, err := pj.Open(addr, access)
	if err != nil {
		return nil, err
	}
	return &server{addr: addr, host: host, port: port, access: access, client: client, conn: conn}, nil
}

// freshDatabase creates an empty database with the journal's tables and
// views (pj.Migrate) under a new name; drop removes it.
func (s *server) freshDatabase(ctx context.Context) (string, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	db := "vmplane_bench_journal_" + hex.EncodeToString(b)
	if err := pj.Migrate(ctx, s.conn, db); err != nil {
		s.drop(db)
		return "", err
	}
	return db, nil
}

func (s *server) drop(db string) {
	_ = s.conn.Exec(context.Background(), "DROP DATABASE IF EXISTS `"+db+"`")
}

// clientCmd is a clickhouse-client run of query, reading stdin, with more
// options (settings) if given.
func (s *server) clientCmd(ctx context.Context, query string, stdin io.Reader, opts ...string) *exec.Cmd {
	args := []string{"--host", s.host, "--port", s.port, "--query", query}
	if s.access.User != "" {
		args = append(args, "--user", s.access.User)
	}
	if s.access.Password != "" {
		// 18.16's client reads it from nowhere else; a benchmark's server.
		args = append(args, "--password", s.access.Password)
	}
	if s.access.TLS {
		args = append(args, "--secure")
	}
	cmd := exec.CommandContext(ctx, s.client, append(args, opts...)...)
	cmd.Stdin = stdin
	return cmd
}

// dump is the TabSeparated text of every row of db.table.
func (s *server) dump(ctx context.Context, db, table string) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd := s.clientCmd(ctx, fmt.Sprintf("SELECT * FROM `%s`.%s FORMAT TabSeparated", db, table), nil)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dump %s: %v: %s", table, err, errb.String())
	}
	return out.Bytes(), nil
}

func (s *server) count(ctx context.Context, db, table string) (uint64, error) {
	var n uint64
	err := s.conn.QueryRow(ctx, fmt.Sprintf("SELECT count() FROM `%s`.%s", db, table)).Scan(&n)
	return n, err
}

// ServerVersion is the test ClickHouse server's version, "" when it does
// not answer (the results then say so).
func ServerVersion(ctx context.Context) string {
	access, err := testkit.ClickHouseAccess()
	if err != nil {
		return ""
	}
	conn, err := pj.Open(testkit.ClickHouseAddr(), access)
	if err != nil {
		return ""
	}
	defer conn.Close()
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return ""
	}
	return v
}

// cpu is the CPU time the server's query threads have spent since it
// started (system.events, user and system): the difference over a phase is
// what its inserts cost the server, as long as nothing else queries it.
func (s *server) cpu(ctx context.Context) time.Duration {
	var us uint64
	err := s.conn.QueryRow(ctx, `SELECT sum(value) FROM system.events WHERE event IN ('UserTimeMicroseconds', 'SystemTimeMicroseconds')`).Scan(&us)
	if err != nil {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}
