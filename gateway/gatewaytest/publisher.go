package gatewaytest

import (
	"context"
	"slices"
	"sync"

	"github.com/vmplane/vmplane/schemas"
)

// Recorder is a Publisher that keeps what it was given. OnPublish, when
// set, sees each record after it is recorded (a test can play the
// processor and projector there); Err, when set, fails every Publish.
type Recorder struct {
	mu        sync.Mutex
	recs      []schemas.Record
	Err       error
	OnPublish func(schemas.Record)
}

// Publish records recs and hands each to OnPublish, or fails with Err.
func (r *Recorder) Publish(_ context.Context, recs ...schemas.Record) error {
	r.mu.Lock()
	if r.Err != nil {
		r.mu.Unlock()
		return r.Err
	}
	r.recs = append(r.recs, recs...)
	hook := r.OnPublish
	r.mu.Unlock()
	if hook != nil {
		for _, rec := range recs {
			hook(rec)
		}
	}
	return nil
}

// Records returns what was published so far.
func (r *Recorder) Records() []schemas.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}
