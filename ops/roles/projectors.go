package roles

import (
	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/projectors/journal"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// Projector is a projector role: it runs, and says when it has been
// retrying for long.
type Projector interface {
	Runner
	Healthy
}

// NewPostgresProjector returns the read-model projector.
func NewPostgresProjector(o Options, dsn string) (Projector, error) {
	return postgres.New(postgres.Config{Kafka: o.Kafka, DSN: dsn, InstanceID: o.InstanceID, Logger: o.Logger})
}

// NewJournalProjector returns the ClickHouse journal projector.
func NewJournalProjector(o Options, addr, database string) (Projector, error) {
	return journal.New(journal.Config{Kafka: o.Kafka, Addr: addr, Access: o.ClickHouse, Database: database, InstanceID: o.InstanceID, Logger: o.Logger})
}

// OpenHistory connects the gateway's reader of the ClickHouse history
// (VM history, time travel, old jobs, analysts' read-only queries) as a's
// users.
func OpenHistory(addr, database string, a chserver.Access) (*journal.History, error) {
	return journal.OpenHistory(addr, database, a)
}
