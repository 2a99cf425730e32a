package hoststorm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/processors/host"
	"github.com/vmplane/vmplane/schemas"
)

// watch follows what the committed log says of the hosts: each host's
// latest status on host.status.v1, the agents' pings on host.events.v1 and
// the investigations (CheckHost, FenceHost) on agent.commands.v1. Since
// mark it keeps which hosts left Up and which were investigated.
type watch struct {
	cl    *kgo.Client
	codec *schemas.Codec
	hosts int

	mu       sync.Mutex
	status   map[string]string
	up       int
	pinged   map[string]bool
	allUp    time.Time // when every host was first Up
	allPing  time.Time // when every host's first ping was in the log
	left     map[string]bool
	probed   map[string]bool
	changed  chan struct{}
	consumed error
}

// newWatch starts following the log of kcfg from its start.
func newWatch(ctx context.Context, kcfg kafka.Config, hosts int) (*watch, error) {
	codec, err := kcfg.Codec()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kcfg.Opts(
		kgo.ConsumeTopics(kcfg.Topics(schemas.TopicHostStatus, schemas.TopicHostEvents, schemas.TopicAgentCommands)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(50*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	w := &watch{cl: cl, codec: codec, hosts: hosts, status: map[string]string{}, pinged: map[string]bool{},
		left: map[string]bool{}, probed: map[string]bool{}, changed: make(chan struct{}, 1)}
	go w.run(ctx, kcfg)
	return w, nil
}

func (w *watch) close() { w.cl.Close() }

func (w *watch) run(ctx context.Context, kcfg kafka.Config) {
	for ctx.Err() == nil {
		f := w.cl.PollFetches(ctx)
		if f.IsClientClosed() {
			return
		}
		recs := kcfg.In(f.Records())
		if len(recs) == 0 {
			continue
		}
		at := time.Now()
		w.mu.Lock()
		for _, kr := range recs {
			in, err := kafka.FromKafka(ctx, w.codec, kr)
			if err != nil {
				w.consumed = err
				continue
			}
			w.apply(in, at)
		}
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
}

// apply takes one record; w.mu is held.
func (w *watch) apply(in schemas.Record, at time.Time) {
	switch v := in.Value.(type) {
	case *schemas.HostStatus:
		if in.Topic != schemas.TopicHostStatus {
			return
		}
		was := w.status[v.HostID]

		w.status[v.HostID] = v.Status
		switch {
		case was != host.StatusUp && v.Status == host.StatusUp:
			w.up++
			if w.up == w.hosts && w.allUp.IsZero() {
				w.allUp = at
			}
		case was == host.StatusUp && v.Status != host.StatusUp:
			w.up--
		}
		switch v.Status {
		case host.StatusDisconnected, host.StatusAlert, host.StatusDown:
			w.left[v.HostID] = true
		}
	case *schemas.AgentPing:
		if !w.pinged[v.HostID] {
			w.pinged[v.HostID] = true
			if len(w.pinged) == w.hosts {
				w.allPing = at
			}
		}
	case *schemas.CheckHost:
		w.probed[v.TargetHostID] = true
	case *schemas.FenceHost:
		w.probed[v.TargetHostID] = true
	}
}

// mark forgets which hosts left Up or were investigated so far.
func (w *watch) mark() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.left, w.probed = map[string]bool{}, map[string]bool{}
}

// counts says how many hosts left Up and how many were investigated
// since mark, and how many are Up now.
func (w *watch) counts() (left, probed, up int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.left), len(w.probed), w.up
}

// waitAll waits until every host was Up and every host's first ping was in
// the log, and returns when each was first seen.
func (w *watch) waitAll(ctx context.Context, limit time.Duration) (up, pinged time.Time, err error) {
	deadline := time.After(limit)
	for {
		w.mu.Lock()
		up, pinged, err = w.allUp, w.allPing, w.consumed
		n := w.up
		w.mu.Unlock()
		if err != nil || (!up.IsZero() && !pinged.IsZero()) {
			return up, pinged, err
		}
		select {
		case <-w.changed:
		case <-deadline:
			return up, pinged, fmt.Errorf("%d of %d hosts Up after %s", n, w.hosts, limit)
		case <-ctx.Done():
			return up, pinged, ctx.Err()
		}
	}
}
