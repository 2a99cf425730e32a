package readmodel

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// seededReader returns a Reader over a migrated database with five VMs and
// jobs of "acme" (vm-0, vm-2, vm-4) and "other" (vm-1, vm-3).
func seededReader(t *testing.T) *Reader {
	t.Helper()
	dsn := migratedDB(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for i := range 5 {
		account := []string{"acme", "other"}[i%2]
		vm := fmt.Sprintf("vm-%d", i)
		if _, err := conn.Exec(t.Context(), `INSERT INTO vms (id, name, account, vm_state, allowed_actions, created_at, updated_at, version)
			VALUES ($1, $1, $2, 'Active', '{stop}', now(), now(), $3)`, vm, account, i); err != nil {
			t.Fatal(err)
		}
		state := []string{"succeeded", "running"}[i%2]
		key := []string{"k1", "k2", "k1", ""}[i%4]
		if _, err := conn.Exec(t.Context(), `INSERT INTO jobs (id, vm_id, account, type, state, created_at, updated_at, version,
			caller_account, caller_key_id, caller_request_id)
			VALUES ($1, $2, $3, 'Start', $4, now(), now(), $5, $3, $6, 'req-' || $1)`, "job-"+vm, vm, account, state, i, key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(t.Context(), `INSERT INTO offerings (id, name, cpu, memory_mb, created_at, version)
		VALUES ('off-1', 'small', 1, 512, now(), 0), ('small', 'tricky', 2, 1024, now(), 1)`); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestReaderNotFound(t *testing.T) {
	r := seededReader(t)
	ctx := t.Context()
	checks := map[string]error{}
	_, checks["vm"] = r.VM(ctx, "nope")
	_, checks["job"] = r.Job(ctx, "nope")
	_, checks["host"] = r.Host(ctx, "nope")
	_, checks["offering"] = r.Offering(ctx, "nope")
	_, checks["api key"] = r.APIKey(ctx, "nope")
	for what, err := range checks {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err %v, want ErrNotFound", what, err)
		}
	}
	if steps, err := r.JobSteps(ctx, "nope"); err != nil || len(steps) != 0 {
		t.Errorf("steps of an unknown job: %v, %v", steps, err)
	}
	if err := r.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
}

func TestReaderAccountFilterAndPages(t *testing.T) {
	r := seededReader(t)
	ctx := t.Context()
	ids := func(vms []VM) []string {
		var out []string
		for _, v := range vms {
			out = append(out, v.ID)
		}
		return out
	}
	tests := []struct {
		account string
		page    Page
		want    []string
	}{
		{"", Page{}, []string{"vm-0", "vm-1", "vm-2", "vm-3", "vm-4"}},
		{"acme", Page{}, []string{"vm-0", "vm-2", "vm-4"}},
		{"other", Page{}, []string{"vm-1", "vm-3"}},
		{"nobody", Page{}, nil},
		{"", Page{Limit: 2}, []string{"vm-0", "vm-1"}},
		{"", Page{Limit: 2, After: "vm-1"}, []string{"vm-2", "vm-3"}},
		{"", Page{Limit: 2, After: "vm-3"}, []string{"vm-4"}},
		{"acme", Page{Limit: 2, After: "vm-0"}, []string{"vm-2", "vm-4"}},
		{"", Page{After: "vm-4"}, nil},
	}
	for _, tt := range tests {
		got, err := r.FilterVMs(ctx, VMFilter{Account: tt.account}, tt.page)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), tt.want) {
			t.Errorf("FilterVMs(%q, %+v) = %v, want %v", tt.account, tt.page, ids(got), tt.want)
		}
	}
	if vm, err := r.VM(ctx, "vm-3"); err != nil || vm.Account != "other" || !slices.Equal(vm.AllowedActions, []string{"stop"}) {
		t.Errorf("VM(vm-3) = %+v, %v", vm, err)
	}

	jobs, err := r.Jobs(ctx, JobFilter{Account: "acme", State: "succeeded"}, Page{Limit: 2})
	if err != nil || len(jobs) != 2 || jobs[0].ID != "job-vm-0" || jobs[1].ID != "job-vm-2" {
		t.Errorf("acme succeeded jobs page 1 = %+v, %v", jobs, err)
	}
	jobs, err = r.Jobs(ctx, JobFilter{Account: "acme", State: "succeeded"}, Page{Limit: 2, After: "job-vm-2"})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "job-vm-4" {
		t.Errorf("acme succeeded jobs page 2 = %+v, %v", jobs, err)
	}
	if jobs, err := r.Jobs(ctx, JobFilter{Account: "acme", VmID: "vm-1"}, Page{}); err != nil || len(jobs) != 0 {
		t.Errorf("acme must not see other's vm-1 jobs: %+v, %v", jobs, err)
	}
	if jobs, err := r.Jobs(ctx, JobFilter{VmID: "vm-1", State: "running"}, Page{}); err != nil || len(jobs) != 1 {
		t.Errorf("admin jobs of vm-1: %+v, %v", jobs, err)
	}
	// Keys k1 (vm-0, vm-2, vm-4) and k2 (vm-1); vm-3's job names none.
	jobs, err = r.Jobs(ctx, JobFilter{KeyID: "k1"}, Page{})
	var jobIDs []string
	for _, j := range jobs {
		jobIDs = append(jobIDs, j.ID)
	}
	if err != nil || !slices.Equal(jobIDs, []string{"job-vm-0", "job-vm-2", "job-vm-4"}) ||
		jobs[0].CallerAccount != "acme" || jobs[0].CallerRequestID != "req-job-vm-0" {
		t.Errorf("jobs of key k1 = %+v, %v", jobs, err)
	}
	if jobs, err := r.Jobs(ctx, JobFilter{Account: "acme", KeyID: "k2"}, Page{}); err != nil || len(jobs) != 0 {
		t.Errorf("acme's jobs of key k2 = %+v, %v", jobs, err)
	}

	// An id beats a name: "small" is the id of one offering and the name of another.
	if o, err := r.Offering(ctx, "small"); err != nil || o.Name != "tricky" {
		t.Errorf("Offering(small) = %+v, %v", o, err)
	}
	if o, err := r.Offering(ctx, "off-1"); err != nil || o.Name != "small" {
		t.Errorf("Offering(off-1) = %+v, %v", o, err)
	}
	if all, err := r.Offerings(ctx); err != nil || len(all) != 2 {
		t.Errorf("Offerings = %+v, %v", all, err)
	}
}

// TestReaderOpensItsPoolUpFront: every connection the reader's pool may use
// is open before the first burst of requests, which would otherwise wait
// for new server processes.
func TestReaderOpensItsPoolUpFront(t *testing.T) {
	dsn := migratedDB(t)
	r, err := NewReader(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	most := r.pool.Config().MaxConns
	if most < 2 {
		t.Fatalf("pool of %d connections", most)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.pool.Stat().TotalConns() < most {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections open 10 s after NewReader, with no request made", r.pool.Stat().TotalConns(), most)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
