package agent

import (
	"context"
	"hash/fnv"
	"sync"
)

// job is one command to execute. run carries it out and calls done once,
// when it is answered: on the worker, or later, from the callback of the
// answer's produce, so that the worker can go on while the broker takes it.
type job struct {
	key  string
	run  func(ctx context.Context, done func())
	done func()
}

// pool runs jobs on a fixed set of workers, all jobs of one key on the same
// worker: commands for different VMs run side by side, commands for one VM
// run in the order they were consumed.
type pool struct {
	queues []chan job
	wg     sync.WaitGroup
}

func newPool(ctx context.Context, workers int) *pool {
	p := &pool{queues: make([]chan job, workers)}
	for i := range p.queues {
		q := make(chan job, 64)
		p.queues[i] = q
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for j := range q {
				j.run(ctx, j.done)
			}
		}()
	}
	return p
}

// submit queues j behind the earlier jobs of its key; it blocks while that
// worker's queue is full (backpressure on the poll loop).
func (p *pool) submit(ctx context.Context, j job) bool {
	h := fnv.New32a()
	h.Write([]byte(j.key))
	select {
	case p.queues[h.Sum32()%uint32(len(p.queues))] <- j:
		return true
	case <-ctx.Done():
		return false
	}
}

// close lets the workers drain their queues and waits for them.
func (p *pool) close() {
	for _, q := range p.queues {
		close(q)
	}
	p.wg.Wait()
}
