package readmodel

import (
	"testing"
	"time"
)

// TestJobWatchNotified feeds notifications to a JobWatch by hand: an ended
// row goes to every watcher of its job, an id list (a projector from before
// rows) and a row it cannot read wake the named job's watchers to read
// again, and a payload without a readable id wakes every watcher.
func TestJobWatchNotified(t *testing.T) {
	w := NewJobWatch("", nil)
	a, stopA := w.Watch("job-a", false)
	defer stopA()
	aSteps, stopASteps := w.Watch("job-a", true)
	defer stopASteps()
	b, stopB := w.Watch("job-b", false)
	defer stopB()
	take := func(ch <-chan *Job) (j *Job, ok bool) {
		select {
		case j = <-ch:
			return j, true
		default:
			return nil, false
		}
	}
	for _, tc := range []struct {
		name, channel, payload string
		a, aSteps, b           string // "row", "nil" (read again) or "" (not woken)
	}{
		{"ended row", jobEndedChannel, `{"id":"job-a","state":"succeeded","account":"acme","allowed_actions":[],"created_at":"2026-11-26T03:00:00.5+00:00","updated_at":"2026-11-26T03:00:01+00:00","finished_at":"2026-11-26T03:00:01+00:00","version":7}`, "row", "row", ""},
		{"ended ids", jobEndedChannel, "job-b job-a", "nil", "nil", "nil"},
		{"stepped ids", jobSteppedChannel, "job-a job-b", "", "nil", ""},
		{"unreadable row", jobEndedChannel, `{"id":"job-b","created_at":"yesterday"}`, "", "", "nil"},
		{"no id", jobEndedChannel, `{"state":`, "nil", "nil", "nil"},
	} {
		w.notified(tc.channel, tc.payload)
		for _, c := range []struct {
			name string
			ch   <-chan *Job
			want string
		}{{"job-a", a, tc.a}, {"job-a with steps", aSteps, tc.aSteps}, {"job-b", b, tc.b}} {
			j, ok := take(c.ch)
			got := map[bool]string{true: "nil", false: ""}[ok]
			if j != nil {
				got = "row"
				if j.ID != "job-a" || j.State != "succeeded" || j.Account != "acme" || j.FinishedAt == nil ||
					!j.CreatedAt.Equal(time.Date(2026, 11, 26, 3, 0, 0, 5e8, time.UTC)) {
					t.Errorf("%s: the row came as %+v", tc.name, *j)
				}
			}
			if got != c.want {
				t.Errorf("%s: the watcher of %s got %q, want %q", tc.name, c.name, got, c.want)
			}
		}
	}
	// A row replaces a read-again that waits; a read-again never replaces
	// a row.
	w.notified(jobEndedChannel, "job-a")
	w.notified(jobEndedChannel, `{"id":"job-a","state":"failed"}`)
	w.notified(jobEndedChannel, "job-a")
	if j, _ := take(a); j == nil || j.State != "failed" {
		t.Fatalf("the waiting news is %+v, want the row", j)
	}
}
