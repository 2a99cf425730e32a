package testkit

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/pgserver"
)

// Stack is what StackUp found or started.
type Stack struct {
	VarDir            string
	PostgresDSN       string
	PostgresStarted   bool
	ClickHouseAddr    string
	ClickHouseStarted bool
}

// StackUp makes the test servers answer, starting local ones under VarDir where the configured
// ones do not, and leaves them running for StackDown: servers it finds that some test process
// started are taken away from the reaper.
func StackUp(ctx context.Context, log *slog.Logger) (Stack, error) {
	varDir, err := VarDir()
	if err != nil {
		return Stack{}, err
	}
	if err := os.MkdirAll(varDir, 0o755); err != nil {
		return Stack{}, err
	}
	// Holding users.lock keeps a reaper from stopping what we are about to claim.
	if err := joinUsers(varDir); err != nil {
		return Stack{}, err
	}
	if err := claimAll(varDir); err != nil {
		return Stack{}, err
	}
	st := Stack{VarDir: varDir}
	pg, err := pgserver.Ensure(ctx, PostgresDSN(), varDir, log)
	if err != nil {
		return st, errorf("postgres: %w", err)
	}
	st.PostgresDSN, st.PostgresStarted = pg.DSN(), pg.Started()
	c, err := chserver.Ensure(ctx, ClickHouseAddr(), varDir, log, chserver.Detached())
	if err != nil {
		return st, errorf("clickhouse: %w", err)
	}
	st.ClickHouseAddr, st.ClickHouseStarted = c.Addr(), c.Started()
	return st, nil
}

// StackDown stops the servers started under VarDir, by StackUp or by tests. Servers it did not
// start, such as the configured ones, keep running.
func StackDown(ctx context.Context) error {
	varDir, err := VarDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(varDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := claimAll(varDir); err != nil {
		return err
	}
	return errors.Join(
		chserver.StopDir(ctx, varDir),
		pgserver.StopDir(ctx, varDir),
	)
}
