package agent

import (
	"context"
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

// pool runs jobs with at most workers running at once, the jobs of one
// key one after another in the order they were submitted: commands for
// different VMs run side by side, commands for one VM in the order they
// were consumed. A key's queue is its own, so a slow job (a live migration
// of minutes) holds back its own key's jobs and one slot; other keys wait
// only when every slot is taken (as many slow jobs as workers).
type pool struct {
	ctx context.Context
	// slots holds a token per running job; queued bounds the jobs
	// submitted and not yet done (backpressure on the poll loop).
	slots, queued chan struct{}
	mu            sync.Mutex
	keys          map[string][]job // a key's jobs waiting; present while its runner lives
	wg            sync.WaitGroup
}

// maxQueued bounds the jobs submitted and not done, beyond which submit
// blocks the poll loop.
const maxQueued = 1024

func newPool(ctx context.Context, workers int) *pool {
	return &pool{ctx: ctx, slots: make(chan struct{}, workers), queued: make(chan struct{}, maxQueued), keys: map[string][]job{}}
}

// submit queues j behind the earlier jobs of its key; it blocks while
// maxQueued jobs are not done, and gives up when ctx ends.
func (p *pool) submit(ctx context.Context, j job) bool {
	select {
	case p.queued <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	p.mu.Lock()
	q, running := p.keys[j.key]
	p.keys[j.key] = append(q, j)
	p.mu.Unlock()
	if !running {
		p.wg.Add(1)
		go p.drain(j.key)
	}
	return true
}

// drain runs the key's jobs one after another, each in a slot, until its
// queue is empty.
func (p *pool) drain(key string) {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		q := p.keys[key]
		if len(q) == 0 {
			delete(p.keys, key)
			p.mu.Unlock()
			return
		}
		j := q[0]
		p.mu.Unlock()
		p.slots <- struct{}{}
		j.run(p.ctx, func() {
			<-p.queued
			j.done()
		})
		<-p.slots
		p.mu.Lock()
		p.keys[key] = p.keys[key][1:]
		p.mu.Unlock()
	}
}

// close waits for every job submitted to run (the queues drain; a job
// whose context has ended returns at once).
func (p *pool) close() {
	p.wg.Wait()
}
