package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"0":                             0,
		"-1":                            0,
		"soon":                          0,
		"Fri, 01 May 2026 10:00:07 GMT": 7 * time.Second,
		"Fri, 01 May 2026 09:59:00 GMT": 0,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

// attempts records what a fake gateway was sent.
type attempts struct {
	mu   sync.Mutex
	keys []string // Idempotency-Key of each request
	at   []time.Time
}

func (r *attempts) add(req *http.Request) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, req.Header.Get("Idempotency-Key"))
	r.at = append(r.at, time.Now())
	return len(r.keys)
}

// TestRetriesHonourRetryAfter: a deploy refused with 429 and Retry-After
// is sent again after that long with the same Idempotency-Key, so that the
// gateway answers a repeat with the first answer rather than deploy twice.
// A deploy refused with a 503 that says to retry is not sent again: the
// log may have taken the command all the same (a timeout), and the
// gateway frees the key of an answer that is no success.
func TestRetriesHonourRetryAfter(t *testing.T) {
	var got attempts
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got.add(r) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"rate_limited","message":"too many requests for this key"}}`))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"id":"j1","vm_id":"vm-9","type":"Deploy","state":"pending","reason":"","task_state":"","created_at":"2026-01-01T00:00:00Z","finished_at":null}`))
	}))
	t.Cleanup(srv.Close)
	code, out, errs := vmctl(t, map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": "k"}, "vm", "deploy", "--name", "w", "--offering", "small")
	if code != exitOK || !strings.Contains(out, "job j1 (Deploy) accepted for VM vm-9") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if len(got.keys) != 2 || got.keys[0] == "" || got.keys[0] != got.keys[1] {
		t.Fatalf("Idempotency-Keys sent: %q", got.keys)
	}
	if waited := got.at[1].Sub(got.at[0]); waited < 900*time.Millisecond {
		t.Fatalf("asked again after %v, before the Retry-After of 1 s", waited)
	}
	if !strings.Contains(errs, "POST /v1/vms: HTTP 429, asking again in 1s (1 of 3)") {
		t.Fatalf("no notice of the retry: %q", errs)
	}

	var once attempts
	srv503 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.add(r)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"the command could not be written to the log; retry (request r1)"}}`))
	}))
	t.Cleanup(srv503.Close)
	code, _, errs = vmctl(t, map[string]string{"VMPLANE_API": srv503.URL, "VMPLANE_API_KEY": "k"}, "vm", "deploy", "--name", "w", "--offering", "small")
	if code != exitFail || len(once.keys) != 1 || !strings.Contains(errs, "could not be written to the log") {
		t.Fatalf("a deploy refused with 503: exit %d after %d requests: %s", code, len(once.keys), errs)
	}
}

// TestRetriesAreBounded: a gateway that keeps refusing is asked
// maxRetries more times, then its error is the command's; a Retry-After
// too long is not waited for; a 503 that is no passing state is not asked
// again, nor a 400.
func TestRetriesAreBounded(t *testing.T) {
	old := retryPause
	retryPause = 10 * time.Millisecond
	t.Cleanup(func() { retryPause = old })
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		message    string
		want       int
	}{
		{"429", http.StatusTooManyRequests, "", "rate limited", 1 + maxRetries},
		{"429 for minutes", http.StatusTooManyRequests, "600", "rate limited", 1},
		{"503 not configured", http.StatusServiceUnavailable, "", "the event history (ClickHouse) is not configured", 1},
		{"400", http.StatusBadRequest, "1", "bad", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got attempts
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.add(r)
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(`{"error":{"code":"x","message":"` + tc.message + `"}}`))
			}))
			t.Cleanup(srv.Close)
			start := time.Now()
			code, _, errs := vmctl(t, map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": "k"}, "vm", "list")
			if code != exitFail || len(got.keys) != tc.want || !strings.Contains(errs, tc.message) || time.Since(start) > 5*time.Second {
				t.Fatalf("exit %d after %d requests in %v: %s", code, len(got.keys), time.Since(start), errs)
			}
			if got.keys[0] != "" {
				t.Fatalf("a GET carried an Idempotency-Key %q", got.keys[0])
			}
		})
	}
}

// TestUnknownColumnSendsNothing: a change with a column its answer cannot
// have is refused before it is sent, so that vmctl never prints a usage
// error for a change it made.
func TestUnknownColumnSendsNothing(t *testing.T) {
	var got attempts
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.add(r)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"command_id":"c1","host_id":"h1","action":"maintenance"}`))
	}))
	t.Cleanup(srv.Close)
	code, _, errs := vmctl(t, map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": "k"}, "host", "maintenance", "h1", "-c", "id")
	if code != exitUsage || !strings.Contains(errs, `unknown column "id"; columns: command_id`) || len(got.keys) != 0 {
		t.Fatalf("exit %d after %d requests: %s", code, len(got.keys), errs)
	}
	if code, out, errs := vmctl(t, map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": "k"}, "host", "maintenance", "h1", "-c", "command_id", "-o", "value"); code != exitOK || out != "c1\n" || len(got.keys) != 1 {
		t.Fatalf("exit %d after %d requests: %q %s", code, len(got.keys), out, errs)
	}
	// With --wait the host is printed: its columns pass the check before
	// the request (what happens after is the answer's to say).
	if code, _, errs := vmctl(t, map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": "k"}, "host", "maintenance", "h1", "--wait", "--timeout", "1ms", "-c", "resource_state"); strings.Contains(errs, "unknown column") || len(got.keys) < 2 {
		t.Fatalf("exit %d after %d requests: %s", code, len(got.keys), errs)
	}
}
