package durability

import (
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/vmplane/vmplane/internal/kafka"
)

// mode is how a broker keeps its log.
type mode int

const (
	memory   mode = iota // StartBroker without a data directory
	unsynced             // a data directory, written through the page cache
	synced               // a data directory, every batch fsynced (StartBroker's)
)

// modes is the order the first repetition starts the brokers in.
var modes = []mode{memory, unsynced, synced}

func (m mode) String() string {
	switch m {
	case memory:
		return "in memory"
	case unsynced:
		return "data dir without fsync"
	default:
		return "synced data dir"
	}
}

// startBroker starts a fresh broker of mode m on a free loopback port; a
// data directory is a new directory under varDir. stop closes the broker
// and removes the directory.
func startBroker(m mode, varDir string) (b *kafka.Broker, stop func(), err error) {
	const addr = "127.0.0.1:0"
	if m == memory {
		b, err := kafka.StartBroker(addr, "")
		if err != nil {
			return nil, nil, err
		}
		return b, b.Close, nil
	}
	if err := os.MkdirAll(varDir, 0o755); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(varDir, "bench-durability-")
	if err != nil {
		return nil, nil, err
	}
	if m == synced {
		b, err = kafka.StartBroker(addr, dir)
	} else {
		// StartBroker adds SyncWrites with a data directory; without
		// one it adds nothing, so the directory comes as an extra option.
		b, err = kafka.StartBroker(addr, "", kfake.DataDir(dir))
	}
	if err != nil {
		_ = os.RemoveAll(dir) // best effort: a scratch directory under var/
		return nil, nil, fmt.Errorf("%s broker: %w", m, err)
	}
	return b, func() { b.Close(); _ = os.RemoveAll(dir) }, nil
}
