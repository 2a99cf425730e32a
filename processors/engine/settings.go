package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// Configurable is a Machine whose settings change while it runs
// (docs/design.md §13). The engine hands it every SettingChanged of
// Config.Settings: in a new session all of them, read to the end before
// anything is stepped, then each new one before the next batch is stepped.
// A machine keeps the latest value per scope and name, so reading the
// topic again from its start leaves it configured as before.
//
// Configure returns an error for a change it refuses (an unknown name, a
// value out of range): the record is a dead letter and the machine stays
// as it was.
type Configurable interface {
	Configure(c *schemas.SettingChanged) error
}

// settingsFeed follows the settings topic for one session: a goroutine
// polls it (every partition, no group: each instance reads all of it) and
// the loop takes what arrived before it steps a batch.
type settingsFeed struct {
	mu   sync.Mutex
	recs []*kgo.Record
	err  error
}

// configurable returns the machine as a Configurable when the processor
// reads settings.
func (p *Processor[S]) configurable() (Configurable, bool) {
	c, ok := p.m.(Configurable)
	return c, ok && p.cfg.Settings != "" && !p.cfg.SkipDecode
}

// restoreSettings reads the settings topic to its last stable offset and
// configures the machine with every record, then starts following it from
// there. An invalid record is only logged here: it was a dead letter when
// an earlier session read it live.
func (p *Processor[S]) restoreSettings(ctx context.Context, restorer *kgo.Client) (*settingsFeed, error) {
	c, ok := p.configurable()
	if !ok {
		return nil, nil
	}
	topic := p.cfg.Kafka.Topic(p.cfg.Settings)
	adm := kadm.NewClient(restorer)
	lso, err := kafka.ListOffsets(ctx, adm.ListCommittedOffsets, topic)
	if err != nil {
		return nil, fmt.Errorf("%s: settings: %w", p.cfg.Name, err)
	}
	starts, err := kafka.ListOffsets(ctx, adm.ListStartOffsets, topic)
	if err != nil {
		return nil, fmt.Errorf("%s: settings: %w", p.cfg.Name, err)
	}
	from, to := map[int32]int64{}, map[int32]int64{}
	lso.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(topic, o.Partition)
		from[o.Partition], to[o.Partition] = s.Offset, o.Offset
	})
	rd := kafka.NewPositionReader(restorer, topic, from, to)
	n := 0
	for !rd.Done() {
		recs, _, err := rd.Fetch(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: settings: %w", p.cfg.Name, err)
		}
		for _, kr := range p.cfg.Kafka.In(recs) {
			if err := p.configure(ctx, c, kr); err != nil {
				p.log.Warn("setting refused", "err", err)
			}
			n++
		}
	}
	p.log.Info("settings read", "records", n)
	offsets := map[int32]kgo.Offset{}
	for part, o := range to {
		offsets[part] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(p.cfg.Kafka.Opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return nil, fmt.Errorf("%s: settings client: %w", p.cfg.Name, err)
	}
	f := &settingsFeed{}
	go f.follow(ctx, cl)
	return f, nil
}

// follow polls the settings topic until ctx ends, then closes cl.
func (f *settingsFeed) follow(ctx context.Context, cl *kgo.Client) {
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		f.mu.Lock()
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil && f.err == nil {
				f.err = err
			}
		})
		f.recs = append(f.recs, fs.Records()...)
		f.mu.Unlock()
	}
}

// take returns the records that arrived since the last take, and the first
// fetch error seen (logged by the loop; the client retries).
func (f *settingsFeed) take() ([]*kgo.Record, error) {
	if f == nil {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, err := f.recs, f.err
	f.recs, f.err = nil, nil
	return recs, err
}

// configure decodes a settings record and hands it to the machine.
func (p *Processor[S]) configure(ctx context.Context, c Configurable, kr *kgo.Record) error {
	in, err := kafka.FromKafka(ctx, p.codec, kr)
	if err != nil {
		return err
	}
	sc, ok := in.Value.(*schemas.SettingChanged)
	if !ok {
		return fmt.Errorf("%s/%d@%d: a %s is no setting", kr.Topic, kr.Partition, kr.Offset, schemas.TypeName(in.Value))
	}
	if err := c.Configure(sc); err != nil {
		return fmt.Errorf("%s/%d@%d: %w", kr.Topic, kr.Partition, kr.Offset, err)
	}
	p.stats.Settings.Add(1)
	return nil
}

// applySettings configures the machine with the settings that arrived
// since the last batch, before the batch is stepped; a refused one is a
// dead letter of the batch's transaction.
func (p *Processor[S]) applySettings(tx *txn, recs []*kgo.Record) {
	c, ok := p.configurable()
	if !ok {
		return
	}
	for _, kr := range recs {
		if kafka.RedriveSkips(kr, p.Group()) {
			continue // a redrive for the consumers that refused it; this one applied it
		}
		if err := p.configure(tx.ctx, c, kr); err != nil {
			p.deadLetter(tx, kr, err)
			continue
		}
		p.log.Info("setting applied", "key", string(kr.Key))
	}
}
