package dev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vmplane/vmplane/internal/pgserver"
)

// The read models of a dev stack are projections of its own Kafka log, so a
// database belongs to the var directory whose log it projects. Two stacks on
// one Postgres (two checkouts, or a second stack with another --var) must not
// share a database: the second would drop or overwrite the first's rows.

const ownerTable = "vmplane_dev_owner"

// claimDatabase decides whether the stack in varDir may use database name
// and whether its rows must be dropped first: they must when the Kafka log is
// new (its offsets point into a log that is gone) or when they belong to a
// stack whose var directory no longer exists. A database owned by another
// live stack is an error that says what to do.
func claimDatabase(ctx context.Context, serverDSN, name, varDir string, freshLog bool) (drop bool, err error) {
	dsn, err := pgserver.WithDatabase(serverDSN, name)
	if err != nil {
		return false, err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name: no such database yet
			return false, nil
		}
		return false, fmt.Errorf("connect postgres database %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	var owner string
	err = conn.QueryRow(ctx, "SELECT var_dir FROM "+ownerTable+" LIMIT 1").Scan(&owner)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01", errors.Is(err, pgx.ErrNoRows): // no owner recorded
		return freshLog, nil
	case err != nil:
		return false, fmt.Errorf("read the owner of database %s: %w", name, err)
	case owner == varDir:
		return freshLog, nil
	}
	if _, err := os.Stat(filepath.Join(owner, "kafka")); err == nil {
		return false, fmt.Errorf("database %s holds the read models of the dev stack in %s; give this stack its own with --database (VMPLANE_DATABASE)", name, owner)
	}
	return true, nil // the owner's log is gone: its rows are stale
}

// recordOwner writes the stack's var directory into the database.
func recordOwner(ctx context.Context, dsn, varDir string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+ownerTable+" (var_dir text PRIMARY KEY)")
	if err == nil {
		_, err = conn.Exec(ctx, "DELETE FROM "+ownerTable)
	}
	if err == nil {
		_, err = conn.Exec(ctx, "INSERT INTO "+ownerTable+" (var_dir) VALUES ($1)", varDir)
	}
	if err != nil {
		return fmt.Errorf("record the owner of the read models: %w", err)
	}
	return nil
}
