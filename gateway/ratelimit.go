package gateway

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// rateLimiter is a token bucket per API key: rate tokens a second, up to
// burst. It is per gateway instance: N instances behind a balancer allow N
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
	if !found {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	if l.rate == 0 {
		return false, time.Hour
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// limit answers 429 with Retry-After (whole seconds, rounded up) once a
// key has spent its bucket.
func (s *Server) limit(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		ok, wait := s.rate.take(principalOf(r.Context()).KeyID, s.now())
		if !ok {
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			e := errorf(http.StatusTooManyRequests, codeRateLimited, "rate limit of %g requests a second exceeded; retry in %d s", s.rate.rate, secs)
			e.Details = map[string]any{"retry_after_seconds": secs}
			return e
		}
		next.ServeHTTP(w, r)
		return nil
	})
}
