package gateway

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// An event from the log carries the fields the streams filter on at once,
// and renders on first send, to the same JSON for every copy and every
// concurrent sender: the record's fields by their Avro names, embedded
// JobRef flattened, the account left out.
func TestEventRendersOnFirstSend(t *testing.T) {
	ref := schemas.JobRef{JobID: "job-1", VmID: "vm-1", Account: "acme", JobType: "Reboot", Origin: "api", At: 1700000000000}
	for _, tc := range []struct {
		name         string
		value        any
		account, job string
		data         map[string]any
	}{
		{
			name: "job event", value: &schemas.JobSucceeded{JobRef: ref, VmState: "Active", StartedAt: 1699999999000},
			account: "acme", job: "job-1",
			data: map[string]any{"job_id": "job-1", "vm_id": "vm-1", "account": "acme", "job_type": "Reboot", "origin": "api",
				"at": float64(1700000000000), "vm_state": "Active", "started_at": float64(1699999999000)},
		},
		{
			name: "power report, no account", value: &schemas.PowerStateObserved{VmID: "vm-1", HostID: "h1", PowerState: "PowerOn", Count: 3, At: 5},
			data: map[string]any{"vm_id": "vm-1", "host_id": "h1", "power_state": "PowerOn", "count": float64(3), "at": float64(5)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := eventOf(schemas.Record{Topic: schemas.TopicVmEvents, Key: "vm-1", Partition: 3, Offset: 42, Value: tc.value})
			if e.ID != "3:42" || e.VmID != "vm-1" || e.Account != tc.account || e.JobID != tc.job || e.Type != schemas.TypeName(tc.value) {
				t.Fatalf("event %+v: want id 3:42, vm vm-1, account %q, job %q, type %s", e, tc.account, tc.job, schemas.TypeName(tc.value))
			}
			copies := []Event{e, e, e, e}
			out := make([][]byte, len(copies))
			var wg sync.WaitGroup
			for i := range copies {
				wg.Go(func() { out[i] = copies[i].marshal() })
			}
			wg.Wait()
			for i := range out {
				if &out[i][0] != &out[0][0] {
					t.Fatalf("copy %d rendered again", i)
				}
			}
			var got map[string]any
			if err := json.Unmarshal(out[0], &got); err != nil {
				t.Fatalf("rendering %s: %v", out[0], err)
			}
			want := map[string]any{"id": "3:42", "type": e.Type, "vm_id": "vm-1", "data": tc.data}
			if tc.job != "" {
				want["job_id"] = tc.job
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("rendered %s\nwant %v", out[0], want)
			}
			if e.body.value != nil {
				t.Fatal("the decoded value is kept after rendering")
			}
		})
	}
}
