package gateway

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"
)

// rateLimiter is a token bucket per API key (or, for requests without a
// valid key, per client address): rate tokens a second, up to burst. It is per gateway instance: N instances behind a balancer allow N
// times the rate, which is what a per-instance bound can promise.
type rateLimiter struct {
	rate  float64
	burst float64

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(rate float64, burst int) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), buckets: map[string]*bucket{}}
}

// take spends a token of key's bucket, or says how long until one is free.
func (l *rateLimiter) take(key string, now time.Time) (ok bool, retryAfter time.Duration) {
	return l.spend(key, now, 1)
}

// allows says whether key's bucket holds a token, spending none.
func (l *rateLimiter) allows(key string, now time.Time) (ok bool, retryAfter time.Duration) {
	return l.spend(key, now, 0)
}

// spend takes n (0 or 1) tokens of key's bucket when it holds one.
func (l *rateLimiter) spend(key string, now time.Time, n float64) (ok bool, retryAfter time.Duration) {
	if l.rate < 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// A full bucket is the same as no bucket: drop those now and then, so
	// that keys seen once do not pile up.
	if now.Sub(l.swept) > time.Minute {
		for k, b := range l.buckets {
			if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, found := l.buckets[key]
	if !found && n == 0 {
		return true, 0 // a full bucket, not worth keeping
	}
	if !found {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens -= n
		return true, 0
	}
	if l.rate == 0 {
		return false, time.Hour
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// limit answers 429 with Retry-After once a key has spent its bucket.
func (s *Server) limit(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		ok, wait := s.rate.take(principalOf(r.Context()).KeyID, s.now())
		if !ok {
			return tooMany(wait, fmt.Sprintf("rate limit of %g requests a second exceeded", s.rate.rate))
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// tooMany is a 429 whose Retry-After is wait in whole seconds, rounded up.
func tooMany(wait time.Duration, why string) *apiError {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	e := errorf(http.StatusTooManyRequests, codeRateLimited, "%s; retry in %d s", why, secs)
	e.Details = map[string]any{"retry_after_seconds": secs}
	e.RetryAfter = secs
	return e
}

// streamSlots counts the streams and long-polls each API key holds open,
// up to max (no bound when max is negative).
type streamSlots struct {
	max int

	mu   sync.Mutex
	open map[string]int
}

func newStreamSlots(max int) *streamSlots {
	return &streamSlots{max: max, open: map[string]int{}}
}

// acquire takes a slot of key, or says there is none free.
func (c *streamSlots) acquire(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max >= 0 && c.open[key] >= c.max {
		return false
	}
	c.open[key]++
	return true
}

func (c *streamSlots) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[key]--; c.open[key] <= 0 {
		delete(c.open, key)
	}
}

// holdSlot takes one of the caller's stream slots for a request that stays
// open (an event stream, a long-poll); release gives it back.
func (s *Server) holdSlot(r *http.Request) (release func(), err error) {
	key := principalOf(r.Context()).KeyID
	if !s.slots.acquire(key) {
		return nil, tooMany(streamRetry, fmt.Sprintf("this API key already holds %d event streams and long-polls open", s.slots.max))
	}
	return func() { s.slots.release(key) }, nil
}

// streamRetry is the Retry-After of a refused stream: long-polls end
// within maxWait, most much sooner.
const streamRetry = 5 * time.Second
