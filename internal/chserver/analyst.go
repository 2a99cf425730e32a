package chserver

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/vmplane/vmplane/internal/atomicfile"
)

// AnalystLimits is the profile of an analyst user: what one query typed by
// an analyst may cost the server. ClickHouse enforces it whatever the query
// says, since the profile is readonly=1, which refuses SET and ignores the
// settings a client sends with a query.
type AnalystLimits struct {
	// MaxExecutionTime stops a query that runs longer (max_execution_time,
	// whole seconds; the server looks between blocks).
	MaxExecutionTime time.Duration
	// MaxRowsToRead refuses a query that reads more rows (max_rows_to_read);
	// from a MergeTree table before it reads any, from the index.
	MaxRowsToRead uint64
	// MaxResultRows and MaxResultBytes refuse an answer larger than that
	// (max_result_rows, max_result_bytes: uncompressed, as the server holds
	// it); no block past the limit is sent.
	MaxResultRows, MaxResultBytes uint64
	// MaxMemoryUsage bounds what one query holds on the server.
	MaxMemoryUsage uint64
}

// DefaultAnalystLimits are what an analyst's query may cost by default:
// 30 s (the gateway waits 35 s, then kills it), a billion rows read, an
// answer of at most a million rows and 64 MiB, and 1 GB of server memory.
func DefaultAnalystLimits() AnalystLimits {
	return AnalystLimits{
		MaxExecutionTime: 30 * time.Second,
		MaxRowsToRead:    1_000_000_000,
		MaxResultRows:    1_000_000,
		MaxResultBytes:   64 << 20,
		MaxMemoryUsage:   1_000_000_000,
	}
}

// AnalystUser is the ClickHouse user that runs analysts' queries of
// database: read-only, bound by its profile, allowed no other database
// (system aside, which ClickHouse always allows: tables' names, running
// queries). One user per database, so that stacks sharing a server cannot
// read each other's journal.
func AnalystUser(database string) string { return "analyst_" + database }

// analystName is what a database name may be for its analyst user to be
// written to users.xml: the user's name is an XML element name.
var analystName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

var analystXML = template.Must(template.New("analyst.xml").Parse(`<?xml version="1.0"?>
<!-- The analyst user of database {{.Database}}: read-only, bounded, that database only. -->
<yandex>
    <profiles>
        <{{.User}}>
            <readonly>1</readonly>
            <max_execution_time>{{.Seconds}}</max_execution_time>
            <timeout_overflow_mode>throw</timeout_overflow_mode>
            <max_rows_to_read>{{.MaxRowsToRead}}</max_rows_to_read>
            <read_overflow_mode>throw</read_overflow_mode>
            <max_result_rows>{{.MaxResultRows}}</max_result_rows>
            <max_result_bytes>{{.MaxResultBytes}}</max_result_bytes>
            <result_overflow_mode>throw</result_overflow_mode>
            <max_memory_usage>{{.MaxMemoryUsage}}</max_memory_usage>
        </{{.User}}>
    </profiles>
    <users>
        <{{.User}}>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>{{.User}}</profile>
            <quota>default</quota>
            <allow_databases>
                <database>{{.Database}}</database>
            </allow_databases>
        </{{.User}}>
    </users>
</yandex>
`))

// AnalystUsersXML returns the users.xml document that defines database's
// analyst user with limits l, for a server's users.d/ directory (a
// production server's operator writes the same, with a password and its
// networks).
func AnalystUsersXML(database string, l AnalystLimits) ([]byte, error) {
	if !analystName.MatchString(database) {
		return nil, fmt.Errorf("database %q: an analyst user needs a name of letters, digits, _ and -", database)
	}
	var b bytes.Buffer
	err := analystXML.Execute(&b, struct {
		AnalystLimits
		Database, User string
		Seconds        int64
	}{l, database, AnalystUser(database), int64(l.MaxExecutionTime.Round(time.Second) / time.Second)})
	return b.Bytes(), err
}

// EnsureAnalyst makes database's analyst user with limits l on the server
// at addr when this package started that server (in this process or
// another): it writes users.d/analyst_<database>.xml in the server's
// directory and has the server reload its users. It also removes the files
// of databases that are gone. A server this package did not start is left
// alone: its operator defines the user (docs/operations.md, "Analysts").
func EnsureAnalyst(ctx context.Context, addr, database string, l AnalystLimits) error {
	return Access{}.EnsureAnalyst(ctx, addr, database, l)
}

// EnsureAnalyst is EnsureAnalyst as a's user.
func (a Access) EnsureAnalyst(ctx context.Context, addr, database string, l AnalystLimits) error {
	conn, err := a.Open(addr, "")
	if err != nil {
		return err
	}
	defer conn.Close()
	dir, err := managedDir(ctx, conn, addr)
	if err != nil || dir == "" {
		return err
	}
	doc, err := AnalystUsersXML(database, l)
	if err != nil {
		return err
	}
	usersD := filepath.Join(dir, "users.d")
	if err := os.MkdirAll(usersD, 0o755); err != nil {
		return err
	}
	if err := pruneAnalysts(ctx, conn, usersD); err != nil {
		return err
	}
	file := filepath.Join(usersD, AnalystUser(database)+".xml")
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, doc) {
		return nil
	}
	if err := atomicfile.Write(file, doc); err != nil {
		return err
	}
	// The server would notice within seconds; the caller may query now.
	if err := conn.Exec(ctx, "SYSTEM RELOAD CONFIG"); err != nil {
		return fmt.Errorf("clickhouse %s: reload the analyst user of %s: %w", addr, database, err)
	}
	return nil
}

// configDirMacro names the directory of a server this package started, in
// the <macros> of its config.
const configDirMacro = "vmplane_config_dir"

// managedDir returns the directory of the server at addr if this package
// started it, else "". The server says where it is: the macro of its
// config, or, for a server started before the macro was written, the data
// path of its system database (18.16's layout: <dir>/data/data/system/).
// config.xml there must be one this package wrote.
func managedDir(ctx context.Context, conn driver.Conn, addr string) (string, error) {
	if host, _, err := net.SplitHostPort(addr); err != nil || !isLoopback(host) {
		return "", nil
	}
	var dir string
	err := conn.QueryRow(ctx, "SELECT substitution FROM system.macros WHERE macro = ?", configDirMacro).Scan(&dir)
	if errors.Is(err, sql.ErrNoRows) || err == nil && dir == "" {
		var dataPath string
		err = conn.QueryRow(ctx, "SELECT data_path FROM system.databases WHERE name = 'system'").Scan(&dataPath)
		dir = strings.TrimSuffix(filepath.Clean(dataPath), filepath.Join("data", "data", "system"))
	}
	if err != nil {
		return "", fmt.Errorf("clickhouse %s: where is its config: %w", addr, err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.xml"))
	if err != nil || !bytes.Contains(cfg, []byte(configMarker)) {
		return "", nil
	}
	return filepath.Clean(dir), nil
}

// pruneAnalysts removes the analyst users of databases that no longer
// exist. The files are listed before the databases: a file written after
// its database was created is never taken for a stale one.
func pruneAnalysts(ctx context.Context, conn driver.Conn, usersD string) error {
	files, err := filepath.Glob(filepath.Join(usersD, AnalystUser("*")+".xml"))
	if err != nil || len(files) == 0 {
		return err
	}
	rows, err := conn.Query(ctx, "SELECT name FROM system.databases")
	if err != nil {
		return fmt.Errorf("list clickhouse databases: %w", err)
	}
	defer rows.Close()
	live := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		live[AnalystUser(name)+".xml"] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, f := range files {
		if !live[filepath.Base(f)] {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
