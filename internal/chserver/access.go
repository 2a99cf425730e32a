package chserver

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/vmplane/vmplane/internal/secret"
)

// Access is how vmplane logs in to a ClickHouse server: the user that
// writes and reads the journal (empty: "default"), its password, the
// password of the database's analyst user (AnalystUser, the gateway's
// analysts' queries), and TLS. A server this package started has
// passwordless users on loopback; a production server has neither
// (docs/operations.md, "ClickHouse users").
type Access struct {
	User, Password  string
	AnalystPassword string
	// TLS to the native protocol's secure port (tcp_port_secure, 9440 by
	// default), with CAFile's certificates or the system pool.
	TLS        bool
	CAFile     string
	ServerName string
}

// AccessFromEnv reads VMPLANE_CH_USER, VMPLANE_CH_PASSWORD,
// VMPLANE_CH_ANALYST_PASSWORD (each password also as a file:
// VMPLANE_CH_PASSWORD_FILE, VMPLANE_CH_ANALYST_PASSWORD_FILE),
// VMPLANE_CH_TLS (true) and VMPLANE_CH_TLS_CA (which implies TLS).
func AccessFromEnv(getenv func(string) string) (Access, error) {
	pw, err := secret.FromEnv(getenv, "VMPLANE_CH_PASSWORD")
	if err != nil {
		return Access{}, err
	}
	apw, err := secret.FromEnv(getenv, "VMPLANE_CH_ANALYST_PASSWORD")
	if err != nil {
		return Access{}, err
	}
	return Access{User: getenv("VMPLANE_CH_USER"), Password: pw, AnalystPassword: apw,
		TLS: getenv("VMPLANE_CH_TLS") == "true" || getenv("VMPLANE_CH_TLS_CA") != "", CAFile: getenv("VMPLANE_CH_TLS_CA")}, nil
}

// Options are the driver's options for addr as a's user on database
// ("" for the server's default database). ClickHouse 18.16 speaks the
// native protocol only to clickhouse-go v2 (its HTTP mode fails there).
func (a Access) Options(addr, database string) (*clickhouse.Options, error) {
	o := &clickhouse.Options{
		Addr:        []string{addr},
		Protocol:    clickhouse.Native,
		Auth:        clickhouse.Auth{Username: a.User, Password: a.Password, Database: database},
		DialTimeout: 5 * time.Second,
	}
	if a.TLS || a.CAFile != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: a.ServerName}
		if a.CAFile != "" {
			pem, err := os.ReadFile(a.CAFile)
			if err != nil {
				return nil, fmt.Errorf("clickhouse tls ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("clickhouse tls ca %s: no certificate", a.CAFile)
			}
			cfg.RootCAs = pool
		}
		o.TLS = cfg
	}
	return o, nil
}

// Analyst is a's access as database's analyst user.
func (a Access) Analyst(database string) Access {
	a.User, a.Password = AnalystUser(database), a.AnalystPassword
	return a
}

// Open connects to addr as a's user (the driver dials lazily, at the first
// query).
func (a Access) Open(addr, database string) (driver.Conn, error) {
	o, err := a.Options(addr, database)
	if err != nil {
		return nil, err
	}
	o.DialTimeout = pingTimeout
	conn, err := clickhouse.Open(o)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", addr, err)
	}
	return conn, nil
}
