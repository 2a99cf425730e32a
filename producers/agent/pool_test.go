package agent

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolQueuesPerKey: a slow job holds back its own key's jobs only;
// each key's jobs run in order; no more than workers run at once.
func TestPoolQueuesPerKey(t *testing.T) {
	p := newPool(context.Background(), 2)
	var mu sync.Mutex
	var order []string
	var running, most atomic.Int32
	release := make(chan struct{})
	add := func(key, name string, wait <-chan struct{}) *sync.WaitGroup {
		var wg sync.WaitGroup
		wg.Add(1)
		p.submit(context.Background(), job{key: key, done: wg.Done, run: func(_ context.Context, done func()) {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if wait != nil {
				<-wait
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			running.Add(-1)
			done()
		}})
		return &wg
	}
	add("vm-a", "a1 migration", release)
	a2 := add("vm-a", "a2", nil)
	var others []*sync.WaitGroup
	for _, name := range []string{"b1", "c1", "b2", "d1"} {
		others = append(others, add("vm-"+name[:1], name, nil))
	}
	deadline := time.After(5 * time.Second)
	for _, wg := range others {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-deadline:
			t.Fatalf("other VMs' jobs wait behind a slow one: ran %q", order)
		}
	}
	mu.Lock()
	if slices.Contains(order, "a2") || slices.Index(order, "b1") > slices.Index(order, "b2") {
		t.Fatalf("order %q: a2 ran before its VM's migration, or b2 before b1", order)
	}
	mu.Unlock()
	close(release)
	a2.Wait()
	p.close()
	if i, j := slices.Index(order, "a1 migration"), slices.Index(order, "a2"); i < 0 || j < i {
		t.Fatalf("order %q", order)
	}
	if m := most.Load(); m > 2 {
		t.Fatalf("%d jobs ran at once with 2 workers", m)
	}
}
