package storm

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// batchMaxBytes is the producer batch limit of the bench clients: kfake
// refuses a batch above its message.max.bytes (1 MiB by default) with
// MESSAGE_TOO_LARGE, which a client configured for larger batches only
// reports in the produce callback. At 50,000 VMs a partition's share of a
// replay is over 1 MiB, so larger batches were dropped silently and the
// null-Step limit waited forever for records that never arrived.
const batchMaxBytes = 1 << 20

// producer produces asynchronously and keeps the first error, so that a
// refused record fails the scenario instead of leaving it waiting.
type producer struct {
	cl  *kgo.Client
	mu  sync.Mutex
	err error
}

func (p *producer) produce(ctx context.Context, r *kgo.Record) {
	p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
		if err != nil {
			p.mu.Lock()
			if p.err == nil {
				p.err = err
			}
			p.mu.Unlock()
		}
	})
}

// flush waits for every produced record and returns the first error.
func (p *producer) flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
