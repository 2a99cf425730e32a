package gateway_test

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// sse reads a stream's events as "event id" lines until n are read.
func sse(t *testing.T, srv *httptest.Server, path, key, lastID string, n int) []string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %s", resp.StatusCode, b)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	var id, ev string
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev = line[7:]
		case line == "" && ev != "":
			out = append(out, ev+" "+id)
			id, ev = "", ""
		}
	}
	return out
}

func publishVM(f *gateway.Fanout, p int32, off int64, v any) {
	f.Publish(gateway.EventOf(schemas.Record{Topic: schemas.TopicVmEvents, Key: vmOf(v), Partition: p, Offset: off, Value: v}))
}

func vmOf(v any) string {
	switch v := v.(type) {
	case *schemas.JobStepped:
		return v.VmID
	case *schemas.JobSucceeded:
		return v.VmID
	case *schemas.PowerStateObserved:
		return v.VmID
	case *schemas.VmStateChanged:
		return v.VmID
	}
	return ""
}

// TestEventStreams: account-scoped, per-VM and per-job streams from the
// fanout, resumable with Last-Event-ID.
func TestEventStreams(t *testing.T) {
	f := gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 100)
	e := newEnv(t, gateway.Config{Events: f})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	refA := schemas.JobRef{JobID: "job-a1", VmID: "vm-a1", Account: "acct-a", JobType: "Reboot"}
	refB := schemas.JobRef{JobID: "job-b1", VmID: "vm-b1", Account: "acct-b", JobType: "Stop"}
	publishVM(f, 3, 10, &schemas.VmStateChanged{VmID: "vm-a1", Account: "acct-a", VmState: "Active"})
	publishVM(f, 5, 20, &schemas.JobStepped{JobRef: refB, Seq: 1, Step: "x"})
	publishVM(f, 3, 11, &schemas.JobStepped{JobRef: refA, Seq: 1, Step: "Rebooting"})
	// PowerStateObserved carries no account: the fanout knows vm-a1's.
	publishVM(f, 3, 12, &schemas.PowerStateObserved{VmID: "vm-a1", PowerState: "PowerOn"})
	publishVM(f, 3, 13, &schemas.JobSucceeded{JobRef: refA})

	got := sse(t, srv, "/v1/events", e.alice, "3:10", 3)
	want := []string{"JobStepped 3:11", "PowerStateObserved 3:12", "JobSucceeded 3:13"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("alice resumed after 3:10: %v, want %v", got, want)
	}
	if got := sse(t, srv, "/v1/events?vm=vm-a1", e.admin, "5:20", 2); got[0] != "JobStepped 3:11" {
		t.Fatalf("admin on vm-a1: %v", got)
	}
	wantStatus(t, e.do("GET", "/v1/events?vm=vm-b1", e.alice, nil), http.StatusNotFound)
	wantStatus(t, e.do("GET", "/v1/events", e.alice, nil, "Last-Event-ID", "nope"), http.StatusUnprocessableEntity)

	// A job stream from the start: a "job" snapshot, then live events,
	// ending with the job.
	done := make(chan []string)
	go func() { done <- sse(t, srv, "/v1/jobs/job-a1/events", e.alice, "3:10", 10) }()
	select {
	case got := <-done:
		if strings.Join(got, ",") != "JobStepped 3:11,JobSucceeded 3:13" {
			t.Fatalf("job stream: %v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the job stream did not end with the job")
	}
	// Live: a subscriber gets an event published after it connected.
	live := make(chan []string)
	go func() { live <- sse(t, srv, "/v1/events?vm=vm-a1", e.alice, "", 1) }()
	deadline := time.Now().Add(5 * time.Second)
	for off := int64(14); ; off++ {
		publishVM(f, 3, off, &schemas.PowerStateObserved{VmID: "vm-a1", PowerState: "PowerOff"})
		select {
		case got := <-live:
			if !strings.HasPrefix(got[0], "PowerStateObserved 3:") {
				t.Fatalf("live: %v", got)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no live event")
		}
	}
}

// TestRateLimit: a key's bucket empties, then 429 with Retry-After; other
// keys are not affected.
func TestRateLimit(t *testing.T) {
	e := newEnv(t, gateway.Config{RatePerSecond: 0.5, RateBurst: 3})
	for i := 0; i < 3; i++ {
		wantStatus(t, e.do("GET", "/v1/vms", e.alice, nil), 200)
	}
	rec := e.do("GET", "/v1/vms", e.alice, nil)
	wantStatus(t, rec, http.StatusTooManyRequests)
	if ra := rec.Header().Get("Retry-After"); ra != "2" {
		t.Fatalf("Retry-After %q, want 2", ra)
	}
	if code := decode[api.ErrorResponse](t, rec).Error.Code; code != "rate_limited" {
		t.Fatalf("code %q", code)
	}
	wantStatus(t, e.do("GET", "/v1/vms", e.bob, nil), 200)
}

// TestIdempotencyEveryMutation: the Idempotency-Key holds on routes that
// do not issue VM jobs too (accounts here).
func TestIdempotencyEveryMutation(t *testing.T) {
	e := newMatrixEnv(t)
	first := e.do("POST", "/v1/accounts/acct-a/keys", e.admin, `{}`, "Idempotency-Key", "key-1")
	wantStatus(t, first, http.StatusCreated)
	again := e.do("POST", "/v1/accounts/acct-a/keys", e.admin, `{}`, "Idempotency-Key", "key-1")
	wantStatus(t, again, http.StatusCreated)
	if decode[api.APIKey](t, again).ID != decode[api.APIKey](t, first).ID || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %s, first %s", again.Body.String(), first.Body.String())
	}
	wantStatus(t, e.do("POST", "/v1/accounts/acct-a/keys", e.admin, `{"role":"admin"}`, "Idempotency-Key", "key-1"), http.StatusUnprocessableEntity)
	// A failed request frees its key.
	wantStatus(t, e.do("POST", "/v1/accounts", e.admin, `{"id":"acct-a"}`, "Idempotency-Key", "key-2"), http.StatusConflict)
	wantStatus(t, e.do("POST", "/v1/accounts", e.admin, `{"id":"acct-a"}`, "Idempotency-Key", "key-2"), http.StatusConflict)
}

// FuzzPathParams: any path parameter answers with the error shape or a
// resource, never a 500 and never another account's resource.
func FuzzPathParams(f *testing.F) {
	for _, s := range []string{"vm-a1", "vm-b1", "", "..", "%2e%2e", "a/b", "x\x00y", strings.Repeat("z", 300), "job-a1", "{id}"} {
		f.Add(s)
	}
	e := newMatrixEnv(&testing.T{})
	f.Fuzz(func(t *testing.T, id string) {
		e.t = t
		for _, tmpl := range []string{"/v1/vms/%s", "/v1/jobs/%s", "/v1/leases/%s", "/v1/accounts/%s/keys", "/v1/vms/%s/actions"} {
			path := strings.Replace(tmpl, "%s", escapePath(id), 1)
			method := "GET"
			var body any
			if strings.HasSuffix(tmpl, "actions") {
				method, body = "POST", `{"action":"reboot"}`
			}
			req := httptest.NewRequestWithContext(t.Context(), method, "http://gw"+path, nil)
			if body != nil {
				req = httptest.NewRequestWithContext(t.Context(), method, "http://gw"+path, strings.NewReader(body.(string)))
			}
			req.Header.Set("Authorization", "Bearer "+e.alice)
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
			}
			if strings.Contains(rec.Body.String(), "acct-b") {
				t.Fatalf("%s %s showed another account: %s", method, path, rec.Body.String())
			}
			if rec.Code >= 400 && rec.Code != 404 && rec.Code != 405 {
				if decode[api.ErrorResponse](t, rec).Error.Code == "" {
					t.Fatalf("%s %s: %d without the error shape", method, path, rec.Code)
				}
			}
		}
	})
}

func escapePath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	if b.Len() == 0 {
		return "%20"
	}
	return b.String()
}

// TestEventStreamBurst: events published faster than the stream writes
// (they go out several per flush) all arrive, once each and in order.
func TestEventStreamBurst(t *testing.T) {
	f := gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 1000)
	e := newEnv(t, gateway.Config{Events: f})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	defer srv.CloseClientConnections() // the stream outlives the test's reads
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/v1/events?vm=vm-a1", nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	got := make(chan string, 1000)
	go func() {
		resp, err := srv.Client().Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				got <- id
			}
		}
	}()
	publishVM(f, 3, 1, &schemas.VmStateChanged{VmID: "vm-a1", Account: "acct-a", VmState: "Active"})
	// Probe until the live subscription is there.
	off := int64(2)
	deadline := time.Now().Add(5 * time.Second)
probe:
	for ; ; off++ {
		publishVM(f, 3, off, &schemas.PowerStateObserved{VmID: "vm-a1", PowerState: "PowerOn"})
		select {
		case <-got:
			break probe
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no live event")
		}
	}
	const burst = 200 // below the subscriber's buffer: none may be dropped
	first := off + 1
	for i := range int64(burst) {
		publishVM(f, 3, first+i, &schemas.PowerStateObserved{VmID: "vm-a1", PowerState: "PowerOn"})
	}
	want := first
	for want < first+burst {
		select {
		case id := <-got:
			n, err := strconv.ParseInt(strings.TrimPrefix(id, "3:"), 10, 64)
			if err != nil {
				t.Fatalf("event id %q", id)
			}
			if n < first {
				continue // a late probe
			}
			if n != want {
				t.Fatalf("event 3:%d, want 3:%d", n, want)
			}
			want++
		case <-time.After(5 * time.Second):
			t.Fatalf("the burst stopped at 3:%d of 3:%d..3:%d", want, first, first+burst-1)
		}
	}
}

// openStream opens path as key and returns the response once its headers
// are in; the caller closes the body.
func openStream(t *testing.T, srv *httptest.Server, path, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// lines sends the lines of r to a channel, closed at the end of r.
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// TestStreamEndsWithItsKey: a stream sends its headers and a first comment
// at once, checks its key at each heartbeat, and ends with an error event
// when the key is revoked or has expired.
func TestStreamEndsWithItsKey(t *testing.T) {
	f := gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 100)
	e := newEnv(t, gateway.Config{Events: f, Heartbeat: 50 * time.Millisecond, KeyCacheTTL: 20 * time.Millisecond})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	e.rm.PutJob(readmodel.Job{ID: "job-run", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	revocable := e.addKey("acct-a", gateway.RoleUser)
	expiring := e.addKey("acct-a", gateway.RoleUser)
	// The expiring key's life starts with its subtest, so that a slow
	// machine running the first one does not expire it before it opens.
	expireSoon := func() {
		k, _ := e.rm.APIKey(t.Context(), keyID(expiring))
		soon := time.Now().Add(400 * time.Millisecond)
		k.ExpiresAt = &soon
		e.rm.PutAPIKey(k)
	}

	for _, tc := range []struct {
		name, key, path, want string
		begin, end            func()
	}{
		{"revoked", revocable, "/v1/events", "API key revoked", func() {}, func() {
			k, _ := e.rm.APIKey(t.Context(), keyID(revocable))
			k.Revoked = true
			e.rm.PutAPIKey(k)
		}},
		{"expired", expiring, "/v1/jobs/job-run/events", "API key expired", expireSoon, func() {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.begin()
			start := time.Now()
			resp := openStream(t, srv, tc.path, tc.key)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || time.Since(start) > 2*time.Second {
				t.Fatalf("status %d after %v", resp.StatusCode, time.Since(start))
			}
			got := lines(resp.Body)
			if first := <-got; !strings.HasPrefix(first, ":") {
				t.Fatalf("first line %q, want a comment", first)
			}
			// Alive over several heartbeats while the key is good.
			time.Sleep(200 * time.Millisecond)
			tc.end()
			var seen []string
			deadline := time.After(5 * time.Second)
			for {
				select {
				case l, ok := <-got:
					if !ok {
						if !slices.Contains(seen, "event: error") || !strings.Contains(strings.Join(seen, "\n"), tc.want) {
							t.Fatalf("the stream ended with %q, want an error event saying %q", seen, tc.want)
						}
						return
					}
					seen = append(seen, l)
				case <-deadline:
					t.Fatalf("the stream outlived its key: %q", seen)
				}
			}
		})
	}
}

// TestStreamSlots: a key holds at most MaxStreamsPerKey streams and
// long-polls; one more is a 429 with Retry-After, another key is not
// affected, and a closed stream frees its slot.
func TestStreamSlots(t *testing.T) {
	f := gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 100)
	e := newEnv(t, gateway.Config{Events: f, MaxStreamsPerKey: 2})
	e.rm.PutJob(readmodel.Job{ID: "job-run", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	a := openStream(t, srv, "/v1/events", e.alice)
	defer a.Body.Close()
	// The long-poll runs off the test's goroutine, which alone may fail
	// the test: a failed request sends 0.
	pollDone := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/v1/jobs/job-run?wait=2s", nil)
		req.Header.Set("Authorization", "Bearer "+e.alice)
		resp, err := srv.Client().Do(req)
		if err != nil {
			pollDone <- 0
			return
		}
		resp.Body.Close()
		pollDone <- resp.StatusCode
	}()
	// The long-poll takes the second slot once it is in.
	deadline := time.Now().Add(5 * time.Second)
	var refused *httptest.ResponseRecorder
	for refused == nil || refused.Code != http.StatusTooManyRequests {
		if time.Now().After(deadline) {
			t.Fatalf("a third stream was not refused: %d", refused.Code)
		}
		time.Sleep(20 * time.Millisecond)
		refused = e.do("GET", "/v1/jobs/job-run?wait=1ms", e.alice, nil)
	}
	if refused.Header().Get("Retry-After") == "" || decode[api.ErrorResponse](t, refused).Error.Code != "rate_limited" {
		t.Fatalf("429 without Retry-After: %v %s", refused.Header(), refused.Body.String())
	}
	wantStatus(t, e.do("GET", "/v1/jobs/job-a1", e.alice, nil), http.StatusOK) // no wait, no slot
	b := openStream(t, srv, "/v1/events", e.bob)
	b.Body.Close()
	if b.StatusCode != http.StatusOK {
		t.Fatalf("bob's stream: %d", b.StatusCode)
	}
	if code := <-pollDone; code != http.StatusOK {
		t.Fatalf("long-poll: %d", code)
	}
	a.Body.Close()
	for {
		c := openStream(t, srv, "/v1/events", e.alice)
		c.Body.Close()
		if c.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closed streams kept their slots: %d", c.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
