package postgres

import (
	"strings"
	"testing"

	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestProjectorLeases projects a lease's life (created, started, healed,
// an answer about an unknown lease, a host notification) and reads it back
// as the gateway does (readmodel): the latest row wins, every notification
// is listed once, in log order.
func TestProjectorLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres and the embedded broker")
	}
	kcfg, dsn := testBroker(t), testDB(t)
	p := newProducer(t, kcfg)
	const at = int64(1_777_000_000_000)
	res := func(status string, hosts []string, changed bool) []schemas.Reservation {
		return []schemas.Reservation{{ID: "l1-r1", Status: status, MinHosts: 2, MaxHosts: 2, Hosts: hosts,
			HostProperties: map[string]string{"rack": "a"}, ResourcesChanged: changed}}
	}
	ev := func(v any) { p.send(schemas.TopicLeaseEvents, "z1", v) }
	base := schemas.LeaseStatusChanged{LeaseID: "l1", ZoneID: "z1", Project: "acme", Name: "lab", Start: at, End: at + 3_600_000}
	l := base
	l.Status, l.Event, l.Reservations, l.At, l.CommandID = "PENDING", "created", res("pending", []string{"h1", "h2"}, false), at, "c1"
	ev(&l)
	l2 := base
	l2.Status, l2.Event, l2.Reservations, l2.At = "ACTIVE", "started", res("active", []string{"h1", "h2"}, false), at+1
	ev(&l2)
	ev(&schemas.LeaseHostChanged{ZoneID: "z1", HostID: "h1", Status: "Down", ResourceState: "Enabled", Leases: []string{"l1"}, At: at + 2})
	l3 := base
	l3.Status, l3.Event, l3.Degraded, l3.Reservations, l3.At, l3.Detail = "ACTIVE", "healed", true,
		res("active", []string{"h2", "h3"}, true), at+2, "host h1 of l1-r1 failed: replaced by h3"
	ev(&l3)
	ev(&schemas.LeaseStatusChanged{LeaseID: "nope", ZoneID: "z1", Project: "acme", Event: "update_failed", Detail: "no lease nope", At: at + 3})
	other := base
	other.LeaseID, other.Project, other.Status, other.Event, other.At = "l2", "bolt", "ERROR", "create_failed", at+4
	other.Reason = "reservation l2-r1: 0 of at least 1 hosts free"
	ev(&other)
	startProjector(t, Config{Kafka: kcfg, DSN: dsn}, nil)
	waitApplied(t, dsn, DefaultGroup, p)

	r, err := readmodel.NewReader(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Lease(t.Context(), "l1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "ACTIVE" || !got.Degraded || got.Project != "acme" || len(got.Reservations) != 1 {
		t.Fatalf("l1 %+v", got)
	}
	rv := got.Reservations[0]
	if !rv.ResourcesChanged || rv.MissingResources || rv.Status != "active" || len(rv.Hosts) != 2 || rv.Hosts[1] != "h3" ||
		rv.HostProperties["rack"] != "a" {
		t.Fatalf("l1 reservation %+v", rv)
	}
	if _, err := r.Lease(t.Context(), "nope"); err == nil {
		t.Fatal("an answer about an unknown lease made a lease row")
	}
	mine, err := r.Leases(t.Context(), "acme", readmodel.Page{})
	if err != nil || len(mine) != 1 || mine[0].ID != "l1" {
		t.Fatalf("acme's leases %+v (err %v)", mine, err)
	}
	all, err := r.Leases(t.Context(), "", readmodel.Page{})
	if err != nil || len(all) != 2 || all[1].Reason == "" {
		t.Fatalf("every lease %+v (err %v)", all, err)
	}
	events, err := r.LeaseEvents(t.Context(), "l1", readmodel.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range events {
		names = append(names, e.Event)
	}
	if want := "created started host_unreservable healed"; strings.Join(names, " ") != want {
		t.Fatalf("l1 events %q, want %q", strings.Join(names, " "), want)
	}
	page, err := r.LeaseEvents(t.Context(), "l1", readmodel.Page{After: events[1].Seq, Limit: 1})
	if err != nil || len(page) != 1 || page[0].Event != "host_unreservable" || page[0].HostID != "h1" {
		t.Fatalf("page after %s: %+v (err %v)", events[1].Seq, page, err)
	}
}
