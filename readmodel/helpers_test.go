package readmodel

import (
	"testing"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// migratedDB is a fresh database, dropped when the test ends, with the
// schema the projector owns and migrates: the tables this package reads.
func migratedDB(t *testing.T) string {
	t.Helper()
	dsn := testkit.Postgres(t)
	if err := postgres.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	return dsn
}
