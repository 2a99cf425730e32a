package kafka

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is an embedded Kafka-protocol broker (kfake) for the dev stack, the
// `vmplane broker` role of small installs, and tests.
type Broker struct {
	c *kfake.Cluster
}

// StartBroker starts kfake on addr (host:port; port 0 picks one). With a
// dataDir the log survives restarts, and every produce is written to disk
// with fsync before it is answered (SyncWrites): in an event-sourced
// system the log is the truth, so an acknowledged record must survive a
// power loss, not only a killed process. extra adds kfake options, e.g.
// SecureOpts for SASL and ACLs.
func StartBroker(addr, dataDir string, extra ...kfake.Opt) (*Broker, error) {
	return startBroker(addr, dataDir, true, extra)
}

// StartBrokerUnsynced is StartBroker without the fsync of every produce:
// what is written survives a killed broker process (it is in the page
// cache), not a power loss. kfake writes a transaction's markers partition
// after partition and its crash recovery aborts a transaction that has no
// marker, so a broker killed in the middle of a commit can leave the
// transaction committed in some partitions and aborted in others (a real
// Kafka cluster logs the decision first and completes it after a crash).
// Unsynced, that window is microseconds instead of milliseconds: the
// crash-loop test, which kills processes and never the machine, uses it.
func StartBrokerUnsynced(addr, dataDir string, extra ...kfake.Opt) (*Broker, error) {
	return startBroker(addr, dataDir, false, extra)
}

func startBroker(addr, dataDir string, sync bool, extra []kfake.Opt) (*Broker, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("broker address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("broker port %q: %w", port, err)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(p),
		kfake.ListenFn(func(network, a string) (net.Listener, error) {
			_, pp, _ := net.SplitHostPort(a)
			return net.Listen(network, net.JoinHostPort(host, pp))
		}),
		kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "900000"}),
		kfake.GroupMinSessionTimeout(time.Second),
	}
	if dataDir != "" {
		opts = append(opts, kfake.DataDir(dataDir))
		if sync {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	c, err := kfake.NewCluster(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("start kfake on %s: %w", addr, err)
	}
	return &Broker{c: c}, nil
}

// Addrs returns the broker's listen addresses.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// Cluster exposes kfake for fault injection in tests.
func (b *Broker) Cluster() *kfake.Cluster { return b.c }

// Close stops the broker, flushing its data directory.
func (b *Broker) Close() { b.c.Close() }
