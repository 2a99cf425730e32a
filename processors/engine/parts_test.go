package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// hosts is a toy Parted machine: a key's state lists the hosts its power
// reports named, each with the latest report's state and sequence, one
// part per host ("host:<id>") and a header with the key. A report with
// power state "Gone" removes its host; one without a host removes the key.
type hosts struct {
	// changed marks the hosts of each key changed since AppendParts: a
	// key stepped to no state marks every host it had.
	changed map[string]map[string]bool
}

func newHosts() *hosts { return &hosts{changed: map[string]map[string]bool{}} }

func (h *hosts) Step(s *schemas.LeaseZoneRecord, in schemas.Record, now time.Time) (*schemas.LeaseZoneRecord, []schemas.Record) {
	r := in.Value.(*schemas.PowerReport)
	out := []schemas.Record{{Topic: schemas.TopicVmEvents, Key: in.Key, Value: &schemas.PowerStateObserved{VmID: in.Key, At: now.UnixMilli()}}}
	if s == nil {
		s = &schemas.LeaseZoneRecord{ZoneID: in.Key}
	}
	if h.changed[in.Key] == nil {
		h.changed[in.Key] = map[string]bool{}
	}
	if r.HostID == "" {
		for _, x := range s.Hosts {
			h.changed[in.Key][x.HostID] = true
		}
		return nil, out
	}
	h.changed[in.Key][r.HostID] = true
	i := slices.IndexFunc(s.Hosts, func(x schemas.LeaseHost) bool { return x.HostID == r.HostID })
	switch {
	case r.PowerState == "Gone" && i >= 0:
		s.Hosts = slices.Delete(s.Hosts, i, i+1)
	case r.PowerState == "Gone":
	case i >= 0:
		s.Hosts[i].Status, s.Hosts[i].UpdatedAt = r.PowerState, r.ReportSeq
	default:
		s.Hosts = append(s.Hosts, schemas.LeaseHost{HostID: r.HostID, Status: r.PowerState, UpdatedAt: r.ReportSeq})
	}
	return s, out
}

func (h *hosts) Tick(s *schemas.LeaseZoneRecord, _ string, _ time.Time) (*schemas.LeaseZoneRecord, []schemas.Record) {
	return s, nil
}

func (h *hosts) Wake(*schemas.LeaseZoneRecord) time.Time { return time.Time{} }

func (h *hosts) AppendParts(dst []schemas.Part, key string, s *schemas.LeaseZoneRecord, all bool) []schemas.Part {
	changed := h.changed[key]
	delete(h.changed, key)
	if s == nil {
		s = &schemas.LeaseZoneRecord{}
	}
	if all && s.ZoneID != "" {
		changed = map[string]bool{}
		for _, x := range s.Hosts {
			changed[x.HostID] = true
		}
		dst = append(dst, schemas.Part{Value: &schemas.LeaseHostChanged{ZoneID: key}})
	}
	for id := range changed {
		p := schemas.Part{Name: "host:" + id}
		if i := slices.IndexFunc(s.Hosts, func(x schemas.LeaseHost) bool { return x.HostID == id }); i >= 0 {
			p.Value = &schemas.LeaseHostChanged{ZoneID: key, HostID: id, Status: s.Hosts[i].Status, At: s.Hosts[i].UpdatedAt}
		}
		dst = append(dst, p)
	}
	return dst
}

func (h *hosts) Assemble(key string, parts []schemas.Part) (*schemas.LeaseZoneRecord, error) {
	s := &schemas.LeaseZoneRecord{ZoneID: key}
	for _, p := range parts {
		c, ok := p.Value.(*schemas.LeaseHostChanged)
		if !ok || c.ZoneID != key || (p.Name == "") != (c.HostID == "") {
			return nil, fmt.Errorf("part %q: %T", p.Name, p.Value)
		}
		if c.HostID != "" {
			s.Hosts = append(s.Hosts, schemas.LeaseHost{HostID: c.HostID, Status: c.Status, UpdatedAt: c.At})
		}
	}
	return s, nil
}

func runParted(t *testing.T, ctx context.Context, cfg kafka.Config, m *hosts) (*Processor[*schemas.LeaseZoneRecord], chan error) {
	p, err := New(Config{Name: "parted", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "a", SessionTimeout: 2 * time.Second, MaxPollRecords: 40}, Machine[*schemas.LeaseZoneRecord](m))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return p, done
}

// hostsOf lists a state's hosts in id order, as strings.
func hostsOf(s *schemas.LeaseZoneRecord) []string {
	var out []string
	for _, x := range s.Hosts {
		out = append(out, fmt.Sprintf("%s %s %d", x.HostID, x.Status, x.UpdatedAt))
	}
	slices.Sort(out)
	return out
}

// A Parted machine's states come back from the parts its transactions
// wrote, in batches of several keys: random reports add, change and
// remove hosts and whole keys, and a restarted processor restores what a
// machine that stepped the same reports holds. A key restored from a
// state written whole, beside a part left over, is rewritten in parts at
// its next write and the part tombstoned.
func TestPartedStateRestoresFromItsParts(t *testing.T) {
	_, cfg := startBroker(t)
	codec := schemas.NewCodec(nil)
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// k0 as an older processor wrote it: whole, after a part that an
	// earlier life of the key left.
	whole := &schemas.LeaseZoneRecord{ZoneID: "k0", Hosts: []schemas.LeaseHost{{HostID: "old", Status: "Old", UpdatedAt: 1}}}
	var recs []*kgo.Record
	for _, r := range []schemas.Record{
		{Topic: schemas.TopicVmState, Key: schemas.PartKey("k0", "host:left"), Value: &schemas.LeaseHostChanged{ZoneID: "k0", HostID: "left"}},
		{Topic: schemas.TopicVmState, Key: "k0", Value: whole},
	} {
		kr, err := kafka.ToKafka(t.Context(), codec, r)
		if err != nil {
			t.Fatal(err)
		}
		// On k0's partition, where the processor writes k0's parts.
		kr.Partition = schemas.PartitionOf([]byte("k0"), 12)
		recs = append(recs, kr)
	}
	mcl, err := kgo.NewClient(cfg.Opts(kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer mcl.Close()
	if err := mcl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	model := newHosts()
	states := map[string]*schemas.LeaseZoneRecord{"k0": whole}
	rng := rand.New(rand.NewPCG(3, 4))
	var keys []string
	var reports []*schemas.PowerReport
	for i := range 400 {
		key := fmt.Sprintf("k%d", rng.IntN(6))
		r := &schemas.PowerReport{VmID: key, HostID: fmt.Sprintf("h%d", rng.IntN(10)), PowerState: []string{"PowerOn", "PowerOff", "Gone"}[rng.IntN(3)], ReportSeq: int64(i)}
		if rng.IntN(40) == 0 {
			r.HostID = ""
		}
		keys, reports = append(keys, key), append(reports, r)
		states[key], _ = model.Step(states[key], schemas.Record{Key: key, Value: r}, time.Time{})
	}
	produceValues(t, cfg, keys, reports)

	ctx1, stop1 := context.WithCancel(t.Context())
	_, done1 := runParted(t, ctx1, cfg, newHosts())
	readEvents(t, cfg, len(reports))
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	p2, done2 := runParted(t, t.Context(), cfg, newHosts())
	deadline := time.Now().Add(30 * time.Second)
	for p2.ReadyErr() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done2:
		t.Fatalf("processor stopped: %v", err)
	default:
	}
	got, want := map[string][]string{}, map[string][]string{}
	for _, m := range p2.st.parts {
		for k, sl := range m {
			got[k] = hostsOf(sl.s)
		}
	}
	for k, s := range states {
		if s != nil {
			want[k] = hostsOf(s)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored\n%v\nwant\n%v", got, want)
	}
	checkRewritten(t, cfg)
}

// checkRewritten checks that k0's latest record under its key is a header,
// not the whole state, and that the left-over part is tombstoned.
func checkRewritten(t *testing.T, cfg kafka.Config) {
	t.Helper()
	latest := map[string]*kgo.Record{}
	for _, r := range pollCommitted(t, cfg, schemas.TopicVmState, 5*time.Second) {
		latest[string(r.Key)] = r
	}
	if r := latest["k0"]; r == nil || len(r.Headers) == 0 || string(r.Headers[0].Value) != "LeaseHostChanged" {
		t.Fatalf("k0's latest record is not a header: %v", r)
	}
	if r := latest[schemas.PartKey("k0", "host:left")]; r == nil || r.Value != nil {
		t.Fatalf("the left-over part of k0 is not tombstoned: %v", r)
	}
}

// produceValues writes one PowerReport per key, in one produce.
func produceValues(t *testing.T, cfg kafka.Config, keys []string, vs []*schemas.PowerReport) {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i, v := range vs {
		r, err := kafka.ToKafka(t.Context(), schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmPower, Key: keys[i], Value: v})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
