package placement

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// zone is a hand-made zone: hosts "pod/cluster/host" with capacity, and
// VMs already placed per account.
type zoneSpec struct {
	hosts []string // "p1/c1/h1"
	cpu   int32    // per host, physical
	vms   []vmSpec
}

type vmSpec struct {
	id, account, host, planner, group string
	cpu                               int32
}

func (zs zoneSpec) build(t *testing.T, m *Machine) *schemas.ZoneRecord {
	t.Helper()
	var z *schemas.ZoneRecord
	for _, p := range zs.hosts {
		parts := strings.Split(p, "/")
		st := hostUp(parts[2], parts[1], zs.cpu, 64*1024)
		st.PodID = parts[0]
		st.CPUOvercommit = 1
		z, _ = m.Step(z, rec(st), t0)
	}
	for _, v := range zs.vms {
		req := placeReq("seed-"+v.id, v.id, max(v.cpu, 1), 1024)
		req.Account, req.HostID, req.AffinityGroup = v.account, v.host, v.group
		req.Offering.DeploymentPlanner = v.planner
		var out []schemas.Record
		z, out = m.Step(z, rec(req), t0)
		if ds := only[*schemas.PlacementDecided](out); len(ds) != 1 || ds[0].HostID != v.host {
			t.Fatalf("seed %s on %s: %+v", v.id, v.host, out)
		}
	}
	checkInvariants(t, m, z)
	return z
}

func TestPlanners(t *testing.T) {
	two := []string{"p1/c1/h11", "p1/c1/h12", "p2/c2/h21", "p2/c2/h22"}
	three := []string{"p1/c1/h11", "p1/c1/h12", "p1/c2/h21", "p1/c2/h22", "p2/c3/h31", "p2/c3/h32"}
	tests := []struct {
		name    string
		zone    zoneSpec
		planner string
		mode    string
		account string
		group   string
		cpu     int32
		order   []string // expected cluster order; nil to skip
		host    string   // expected choice; "" for a failure
		detail  string   // part of the failure detail
	}{
		{"first fit: most free cluster", zoneSpec{two, 8, []vm{{"a", "acme", "h11", "", "", 4}}}, FirstFitName, "", "acme", "", 2,
			[]string{"c2", "c1"}, "h21", ""},
		{"first fit: first host by id", zoneSpec{two, 8, nil}, FirstFitName, "", "acme", "", 2, []string{"c1", "c2"}, "h11", ""},
		{"dispersing: cluster with fewest of the account's VMs", zoneSpec{two, 8, []vm{
			{"a", "acme", "h21", "", "", 1}, {"b", "bolt", "h11", "", "", 6}, {"c", "bolt", "h12", "", "", 6}}},
			UserDispersingName, "", "acme", "", 1, []string{"c1", "c2"}, "h11", ""},
		{"dispersing: host with fewest of the account's VMs", zoneSpec{two, 8, []vm{
			{"a", "acme", "h11", "", "", 1}, {"b", "acme", "h21", "", "", 1}, {"c", "acme", "h22", "", "", 1}}},
			UserDispersingName, "", "acme", "", 1, []string{"c1", "c2"}, "h12", ""},
		{"concentrated: pod holding most of the account's VMs", zoneSpec{three, 8, []vm{
			{"a", "acme", "h31", "", "", 1}, {"b", "acme", "h32", "", "", 1}, {"c", "acme", "h11", "", "", 1}}},
			UserConcentratedPodName, "", "acme", "", 1, []string{"c3", "c2", "c1"}, "h31", ""},
		{"concentrated: a new account takes most free", zoneSpec{three, 8, []vm{{"a", "acme", "h31", "", "", 4}}},
			UserConcentratedPodName, "", "bolt", "", 1, []string{"c1", "c2", "c3"}, "h11", ""},
		{"dedication: own dedicated host first", zoneSpec{two, 8, []vm{{"a", "acme", "h22", ImplicitDedicationName, "", 1}}},
			ImplicitDedicationName, "", "acme", "", 1, []string{"c2", "c1"}, "h22", ""},
		{"dedication: skips hosts of others and shared ones", zoneSpec{two, 8, []vm{
			{"a", "bolt", "h11", ImplicitDedicationName, "", 1}, {"b", "bolt", "h21", "", "", 1}}},
			ImplicitDedicationName, "", "acme", "", 1, nil, "h12", ""},
		{"dedication strict: nothing of its own fails", zoneSpec{two[:2], 8, []vm{
			{"a", "bolt", "h11", ImplicitDedicationName, "", 1}, {"b", "bolt", "h12", "", "", 1}}},
			ImplicitDedicationName, "", "acme", "", 1, nil, "", "no host: 2 hosts; 1 dedicated to another account, 1 shared, planner needs dedicated"},
		{"dedication preferred: falls back to a shared host", zoneSpec{two[:2], 8, []vm{
			{"a", "bolt", "h11", ImplicitDedicationName, "", 1}, {"b", "bolt", "h12", "", "", 1}}},
			ImplicitDedicationName, schemas.PlannerModePreferred, "acme", "", 1, nil, "h12", ""},
		{"first fit never uses a dedicated host", zoneSpec{two[:1], 8, []vm{{"a", "bolt", "h11", ImplicitDedicationName, "", 1}}},
			FirstFitName, "", "bolt", "", 1, nil, "", "1 dedicated to another planner"},
		{"binpack: fullest cluster, fullest host", zoneSpec{three, 8, []vm{
			{"a", "acme", "h21", "", "", 2}, {"b", "acme", "h22", "", "", 5}, {"c", "acme", "h11", "", "", 1}}},
			BinpackName, "", "acme", "", 2, []string{"c2", "c1", "c3"}, "h22", ""},
		{"binpack: skips a host without room", zoneSpec{three, 8, []vm{{"a", "acme", "h22", "", "", 7}}},
			BinpackName, "", "acme", "", 2, []string{"c2", "c1", "c3"}, "h21", ""},
		{"spread: emptiest host of the emptiest cluster", zoneSpec{three, 8, []vm{
			{"a", "acme", "h11", "", "", 1}, {"b", "acme", "h21", "", "", 1}, {"c", "acme", "h32", "", "", 2}}},
			SpreadName, "", "acme", "", 1, []string{"c1", "c2", "c3"}, "h12", ""},
		{"anti-affinity: never two of a group on one host", zoneSpec{two, 8, []vm{
			{"a", "acme", "h11", "", "web", 1}, {"b", "acme", "h12", "", "web", 1}}},
			FirstFitName, "", "acme", "web", 1, []string{"c2", "c1"}, "h21", ""},
		{"anti-affinity: groups are per account", zoneSpec{two[:1], 8, []vm{{"a", "bolt", "h11", "", "web", 1}}},
			FirstFitName, "", "acme", "web", 1, nil, "h11", ""},
		{"anti-affinity: full group fails and says why", zoneSpec{two[:2], 8, []vm{
			{"a", "acme", "h11", "", "web", 1}, {"b", "acme", "h12", "", "web", 1}}},
			FirstFitName, "", "acme", "web", 1, nil, "", "no host: 2 hosts; 2 hold a VM of the anti-affinity group"},
		{"affinity: follows the group's host", zoneSpec{two, 8, []vm{{"a", "acme", "h22", "", "affinity:db", 1}}},
			FirstFitName, "", "acme", "affinity:db", 1, nil, "h22", ""},
		{"capacity: detail counts the filters", zoneSpec{two, 2, []vm{{"a", "acme", "h11", "", "", 2}}},
			FirstFitName, "", "acme", "", 3, nil, "", "no host: 4 hosts; 4 lack capacity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(DefaultConfig())
			z := tt.zone.build(t, m)
			req := placeReq("r1", "new", tt.cpu, 1024)
			req.Account, req.AffinityGroup = tt.account, tt.group
			req.Offering.DeploymentPlanner, req.Offering.PlannerMode = tt.planner, tt.mode
			if tt.order != nil {
				if got := clusterOrder(m, z, req); !slices.Equal(got, tt.order) {
					t.Fatalf("order %v, want %v", got, tt.order)
				}
			}
			z, out := m.Step(z, rec(req), t0)
			checkInvariants(t, m, z)
			ds, fs := only[*schemas.PlacementDecided](out), only[*schemas.PlacementFailed](out)
			if tt.host == "" {
				if len(fs) != 1 || !strings.Contains(fs[0].Detail, tt.detail) {
					t.Fatalf("want a failure naming %q, got %+v", tt.detail, out)
				}
				return
			}
			if len(ds) != 1 || ds[0].HostID != tt.host || ds[0].Planner != tt.planner {
				t.Fatalf("want %s by %s, got %+v", tt.host, tt.planner, out)
			}
		})
	}
}

type vm = vmSpec

// TestPlannersMatchTheCatalog holds the machine's planners and the
// contract's list (GET /v1/planners) together.
func TestPlannersMatchTheCatalog(t *testing.T) {
	m := New(DefaultConfig())
	got := m.Planners()
	if len(got) != len(schemas.Planners) || len(m.planners) != len(schemas.Planners) {
		t.Fatalf("machine has %d planners, the catalog %d", len(m.planners), len(schemas.Planners))
	}
	for i, s := range schemas.Planners {
		if got[i] != s {
			t.Fatalf("planner %s: machine says %+v", s.Name, got[i])
		}
	}
	if DefaultConfig().DefaultPlanner != schemas.DefaultPlanner {
		t.Fatalf("default planner %s, contract says %s", DefaultConfig().DefaultPlanner, schemas.DefaultPlanner)
	}
}

// clusterOrder is every cluster of z in the order the request's planner
// compares them.
func clusterOrder(m *Machine, z *schemas.ZoneRecord, req *schemas.PlaceVm) []string {
	ix, p := m.index(z), m.planners[req.Offering.DeploymentPlanner]
	v := ix.view(req.Account)
	cs := slices.Clone(ix.byID)
	slices.SortStableFunc(cs, func(a, b *clusterIndex) int { return p.CompareClusters(v, req, &a.Cluster, &b.Cluster) })
	return clusterIDs(&zoneIndex{byID: cs})
}

// TestQueueFollowsThePlannersOrder pops every cluster of a request's queue
// and holds the result to a full stable sort by the planner's comparison:
// the lazy first pick and the heap after it give the same order, ties to
// the lower id, and leave out the clusters too full for the request.
func TestQueueFollowsThePlannersOrder(t *testing.T) {
	var zs zoneSpec
	zs.cpu = 8
	for k := range 12 {
		h := fmt.Sprintf("h%02d", k)
		zs.hosts = append(zs.hosts, fmt.Sprintf("p%d/c%02d/%s", k%3, k, h))
		// Fills of 0 to 8 CPUs, several clusters alike, a few full.
		for n := range (k * 5) % 9 {
			zs.vms = append(zs.vms, vm{id: fmt.Sprintf("v%d-%d", k, n), account: []string{"acme", "bolt"}[n%2], host: h, cpu: 1})
		}
	}
	m := New(DefaultConfig())
	z := zs.build(t, m)
	for _, p := range builtins() {
		for _, account := range []string{"acme", "bolt", "new"} {
			req := placeReq("r", "x", 1, 1024)
			req.Account, req.Offering.DeploymentPlanner = account, p.Name()
			ix := m.index(z)
			var want []string
			for _, id := range clusterOrder(m, z, req) {
				if ix.clusters[id].FreeCPU >= 1 {
					want = append(want, id)
				}
			}
			var got []string
			q := ix.queue(ix.view(account), &ask{req: req, planner: p})
			for c := q.pop(); c != nil; c = q.pop() {
				got = append(got, c.ID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s for %s: queue %v, want %v", p.Name(), account, got, want)
			}
		}
	}
}

// fullWalk is UserDispersing without its TopScore: the manager scores
// every acceptable host of a cluster.
type fullWalk struct{ p UserDispersing }

func (f fullWalk) Name() string          { return f.p.Name() }
func (f fullWalk) ResourceUsage() string { return f.p.ResourceUsage() }
func (f fullWalk) CompareClusters(v View, req *schemas.PlaceVm, a, b *Cluster) int {
	return f.p.CompareClusters(v, req, a, b)
}
func (f fullWalk) ScoreHost(v View, h Host, req *schemas.PlaceVm) float64 {
	return f.p.ScoreHost(v, h, req)
}

// TestTopScoreTakesTheHostOfAFullWalk: stopping at the first host that
// reaches UserDispersing's top score chooses, in every cluster and for
// every account, the host a walk scoring every host chooses. The hosts
// hold 0, 1 or 2 of acme's VMs in an order that puts a host with some
// before one with none, and some are too full for 3 CPUs.
func TestTopScoreTakesTheHostOfAFullWalk(t *testing.T) {
	var zs zoneSpec
	zs.cpu = 6
	for k := range 24 {
		h := fmt.Sprintf("h%02d", k)
		zs.hosts = append(zs.hosts, fmt.Sprintf("p1/c%d/%s", k/6, h))
		for n := range (k*7)%3 + (k*5)%2 + 2*btoi(k%5 == 0) {
			zs.vms = append(zs.vms, vm{id: fmt.Sprintf("v%d-%d", k, n), account: []string{"acme", "bolt"}[n%2], host: h, cpu: 1})
		}
	}
	m := New(DefaultConfig())
	z := zs.build(t, m)
	ix := m.index(z)
	for _, account := range []string{"acme", "bolt", "new"} {
		for _, cpu := range []int32{1, 3} {
			req := placeReq("r", "x", cpu, 1024)
			req.Account = account
			for id, c := range ix.clusters {
				v := ix.view(account)
				got := ix.chooseIn(v, &ask{req: req, planner: UserDispersing{}, usage: Shared}, c)
				want := ix.chooseIn(v, &ask{req: req, planner: fullWalk{}, usage: Shared}, c)
				if got != want {
					t.Errorf("%s, %d CPUs, cluster %s: host %d, a full walk takes %d", account, cpu, id, got, want)
				}
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
